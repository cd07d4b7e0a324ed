// module.cpp: the loadable module: magic block, _PG_init and GUCs.
#include "pg/gucs.hpp"
#include "pg/counters.hpp"
#include "pg/inflight.hpp"
#include "pg/queue_settings.hpp"
#include "pg/postgres_headers.hpp"

extern "C" {
PG_MODULE_MAGIC;

bool awa_async_claim_commit = true;
bool awa_early_lane_release = true;
int awa_gap_proof_lock_timeout_ms = 10;
static int awa_queue_slot_count = 16;
static int awa_claim_slot_count = 8;
static int awa_lease_slot_count = 8;
int awa_max_lanes = 1024;
int awa_max_queues = 1024;
int awa_debug_counter_rebuild_lock = 0;

PGDLLEXPORT void _PG_init(void);
}

void
_PG_init(void)
{
	DefineCustomBoolVariable(
	    "awa.async_claim_commit", "Commits claims that run in their own transaction asynchronously.",
	    "A claim in an implicit transaction commits with synchronous_commit = off, so the lane lock "
	    "is not held across a WAL flush. Inside an explicit transaction block the caller's setting stands.",
	    &awa_async_claim_commit, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable(
	    "awa.early_lane_release", "Releases a lane's claim lock before the claim commits.",
	    "A claim records its planned lanes in the shared-memory in-flight registry and releases the lane "
	    "lock at once, so the lane is free for the next claimer before this claim commits. Off: the lane "
	    "lock is held until the claim's transaction ends, and other claimers skip the lane meanwhile (the "
	    "reference design's behaviour).",
	    &awa_early_lane_release, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable(
	    "awa.gap_proof_lock_timeout", "How long a claim waits to prove a lane gap dead.",
	    "A claim that finds a missing lane below a committed one waits up to this long for the lane's "
	    "in-flight enqueues to end; 0 only tries.",
	    &awa_gap_proof_lock_timeout_ms, 10, 0, 60000, PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.queue_slot_count", "Queue-ring slots created by CREATE EXTENSION.", NULL,
	                        &awa_queue_slot_count, 16, 4, 64, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.claim_slot_count", "Claim-ring slots created by CREATE EXTENSION.", NULL,
	                        &awa_claim_slot_count, 8, 2, 16, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.lease_slot_count", "Lease-ring slots created by CREATE EXTENSION.", NULL,
	                        &awa_lease_slot_count, 8, 2, 64, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.max_lanes", "Lanes the in-flight claim registry can hold (shared memory).",
	                        "A lane beyond this falls back to holding its claim lock until the claim commits.",
	                        &awa_max_lanes, 1024, 16, 1 << 20, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.max_queues", "Queues whose job counts are kept in shared memory.",
	                        "Beyond this, awa.queue_counts counts exactly (its cost then grows with the backlog).",
	                        &awa_max_queues, 1024, 16, 1 << 20, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable(
	    "awa.debug_counter_rebuild_lock", "Test hook: the counter rebuild waits for this advisory lock.",
	    "When not 0, a counter rebuild takes pg_advisory_xact_lock(value) after it has published its "
	    "snapshot and before its exact pass, so a test can commit transactions during the pass.",
	    &awa_debug_counter_rebuild_lock, 0, 0, INT_MAX, PGC_SUSET, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("awa");
	awa::pg::InstallQueueSettingsCache();
	if (process_shared_preload_libraries_in_progress) {
		awa::pg::InstallInflightRegistry();
		awa::pg::InstallCounters();
	}
}
