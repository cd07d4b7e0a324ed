// module.cpp: the loadable module: magic block, _PG_init and GUCs.
// _PG_init defines the settings, then installs the hooks and callbacks
// (callbacks.cpp owns the shared-memory and transaction ones).
#include "pg/gucs.hpp"
#include "pg/callbacks.hpp"
#include "pg/database_ddl.hpp"
#include "pg/queue_settings.hpp"
#include "pg/postgres_headers.hpp"

// Boot values of the settings, each written once: the C variable below is
// initialised from it and its DefineCustom*Variable call in _PG_init passes
// it (PostgreSQL 16 and later check, in assert-enabled builds, that the two
// agree). Units as the variables' names say; docs/operations.md describes them.
namespace boot {
constexpr bool kAsyncClaimCommit = true;
constexpr bool kEarlyLaneRelease = true;
constexpr int kGapProofLockTimeoutMs = 10;
constexpr int kLaneWaitTimeoutMs = 250;
constexpr int kQueueSlotCount = 16;
constexpr int kHistorySlotCount = 8;
constexpr int kClaimSlotCount = 8;
constexpr int kLeaseSlotCount = 8;
constexpr int kMaxLanes = 1024;
constexpr int kMaxQueues = 1000000;
constexpr int kMaxQueuesPerDatabase = 100000;
constexpr int kMaxCountedDatabases = 256;
constexpr int kMaxKeyedQueues = 32;
constexpr int kMaxKeysPerQueue = 16384;
constexpr int kMaxJobBytes = 1024 * 1024;
constexpr int kMaxCallBytes = 64 * 1024 * 1024;
constexpr int kDebugCounterRebuildLock = 0;
constexpr int kDebugHeadWalkLock = 0;
constexpr int kDebugCountsReadLock = 0;
constexpr int kDebugClockOffsetS = 0;
constexpr bool kMaintenanceEnabled = true;
constexpr int kQueueRotateIntervalMs = 1000;
constexpr int kClaimRotateIntervalMs = 1000;
constexpr int kLeaseRotateIntervalMs = 1000;
constexpr int kPruneLockTimeoutMs = 10;
constexpr int kPruneMaxBackoffLevel = 2;
constexpr int kPromoteIntervalMs = 250;
constexpr int kPeriodicIntervalMs = 1000;
constexpr int kPromoteBatchSize = 4096;
constexpr int kPromoteMaxBatches = 32;
constexpr int kHeartbeatStalenessS = 90;
constexpr int kRescueIntervalMs = 5000;
constexpr int kRescueBatchSize = 500;
constexpr int kDlqRetentionS = 30 * 24 * 3600;
constexpr int kHistoryRetentionS = 3600;
constexpr int kCarryMaxRows = 1000;
constexpr int kRingSpareSlots = 16;
constexpr int kRingMaxSlots = 64;
constexpr int kCleanupIntervalS = 60;
constexpr int kLaneReclaimAfterS = 24 * 3600;
constexpr int kCleanupBatchSize = 1000;
constexpr int kLauncherNaptimeS = 60;
}  // namespace boot

extern "C" {
PG_MODULE_MAGIC;

bool awa_async_claim_commit = boot::kAsyncClaimCommit;
bool awa_early_lane_release = boot::kEarlyLaneRelease;
int awa_gap_proof_lock_timeout_ms = boot::kGapProofLockTimeoutMs;
int awa_lane_wait_timeout_ms = boot::kLaneWaitTimeoutMs;
static int awa_queue_slot_count = boot::kQueueSlotCount;
static int awa_history_slot_count = boot::kHistorySlotCount;
static int awa_claim_slot_count = boot::kClaimSlotCount;
static int awa_lease_slot_count = boot::kLeaseSlotCount;
int awa_max_lanes = boot::kMaxLanes;
int awa_max_queues = boot::kMaxQueues;
int awa_max_queues_per_database = boot::kMaxQueuesPerDatabase;
int awa_max_counted_databases = boot::kMaxCountedDatabases;
int awa_max_keyed_queues = boot::kMaxKeyedQueues;
int awa_max_keys_per_queue = boot::kMaxKeysPerQueue;
int awa_max_job_bytes = boot::kMaxJobBytes;
int awa_max_call_bytes = boot::kMaxCallBytes;
int awa_debug_counter_rebuild_lock = boot::kDebugCounterRebuildLock;
int awa_debug_head_walk_lock = boot::kDebugHeadWalkLock;
int awa_debug_counts_read_lock = boot::kDebugCountsReadLock;
int awa_debug_clock_offset_s = boot::kDebugClockOffsetS;
bool awa_maintenance_enabled = boot::kMaintenanceEnabled;
int awa_queue_rotate_interval_ms = boot::kQueueRotateIntervalMs;
int awa_claim_rotate_interval_ms = boot::kClaimRotateIntervalMs;
int awa_lease_rotate_interval_ms = boot::kLeaseRotateIntervalMs;
static int awa_prune_lock_timeout_ms = boot::kPruneLockTimeoutMs;
int awa_prune_max_backoff_level = boot::kPruneMaxBackoffLevel;
int awa_promote_interval_ms = boot::kPromoteIntervalMs;
int awa_periodic_interval_ms = boot::kPeriodicIntervalMs;
static int awa_promote_batch_size = boot::kPromoteBatchSize;
static int awa_promote_max_batches = boot::kPromoteMaxBatches;
static int awa_heartbeat_staleness_s = boot::kHeartbeatStalenessS;
int awa_rescue_interval_ms = boot::kRescueIntervalMs;
static int awa_rescue_batch_size = boot::kRescueBatchSize;
static int awa_dlq_retention_s = boot::kDlqRetentionS;
static int awa_history_retention_s = boot::kHistoryRetentionS;
static int awa_carry_max_rows = boot::kCarryMaxRows;
static int awa_ring_spare_slots = boot::kRingSpareSlots;
static int awa_ring_max_slots = boot::kRingMaxSlots;
int awa_cleanup_interval_s = boot::kCleanupIntervalS;
int awa_lane_reclaim_after_s = boot::kLaneReclaimAfterS;
static int awa_cleanup_batch_size = boot::kCleanupBatchSize;
int awa_launcher_naptime_s = boot::kLauncherNaptimeS;

PGDLLEXPORT void _PG_init(void);
}

namespace awa::pg {
void RegisterMaintenanceLauncher();  // maintenance_worker.cpp
}

// The background worker's settings (docs/operations.md). Cadences (SIGHUP)
// take effect at the next reload. The limits the steps read (SUSET) come from
// the configuration file for the worker, and a superuser may SET them for an
// awa.run_maintenance call of their own.
static void
DefineMaintenanceVariables()
{
	DefineCustomBoolVariable("awa.maintenance_enabled", "Runs awa's background maintenance.",
	                         "Off: the workers stay idle (rings stop rotating and pruning, nothing is promoted or "
	                         "rescued) until it is turned on again; awa.run_maintenance still works.",
	                         &awa_maintenance_enabled, boot::kMaintenanceEnabled, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.queue_rotate_interval", "How often the queue ring is pruned and rotated.", NULL,
	                        &awa_queue_rotate_interval_ms, boot::kQueueRotateIntervalMs, 10, 3600 * 1000, PGC_SIGHUP,
	                        GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.claim_rotate_interval", "How often the claim ring is pruned and rotated.", NULL,
	                        &awa_claim_rotate_interval_ms, boot::kClaimRotateIntervalMs, 10, 3600 * 1000, PGC_SIGHUP,
	                        GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.lease_rotate_interval", "How often the lease ring is pruned and rotated.", NULL,
	                        &awa_lease_rotate_interval_ms, boot::kLeaseRotateIntervalMs, 10, 3600 * 1000, PGC_SIGHUP,
	                        GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.prune_lock_timeout", "Longest wait of a prune for ACCESS EXCLUSIVE on a ring slot.",
	                        "A prune that waits longer gives up (outcome blocked) and backs off; meanwhile claims "
	                        "and enqueues queue behind it at most this long.",
	                        &awa_prune_lock_timeout_ms, boot::kPruneLockTimeoutMs, 1, 60000, PGC_SUSET, GUC_UNIT_MS,
	                        NULL, NULL, NULL);
	DefineCustomIntVariable("awa.prune_max_backoff_level", "Cap of a ring's prune back-off (2^level ticks).", NULL,
	                        &awa_prune_max_backoff_level, boot::kPruneMaxBackoffLevel, 0, 10, PGC_SIGHUP, 0, NULL, NULL,
	                        NULL);
	DefineCustomIntVariable("awa.promote_interval", "How often due scheduled and retryable jobs are promoted.", NULL,
	                        &awa_promote_interval_ms, boot::kPromoteIntervalMs, 10, 3600 * 1000, PGC_SIGHUP,
	                        GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.periodic_interval", "How often, at most, the worker looks for due periodic jobs.",
	                        "It also wakes at the earliest next tick; this bounds how late it sees a schedule "
	                        "created or changed since it last looked.",
	                        &awa_periodic_interval_ms, boot::kPeriodicIntervalMs, 10, 3600 * 1000, PGC_SIGHUP,
	                        GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.promote_batch_size", "Jobs promoted per batch.", NULL, &awa_promote_batch_size,
	                        boot::kPromoteBatchSize, 1, 100000, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.promote_max_batches", "Promotion batches per tick.", NULL, &awa_promote_max_batches,
	                        boot::kPromoteMaxBatches, 1, 1000, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.heartbeat_staleness", "Age of an attempt's last heartbeat (else its claim) at which "
	                        "its worker is presumed dead and the attempt rescued.",
	                        "Workers of long jobs must heartbeat more often than this (every 30 s for the default).",
	                        &awa_heartbeat_staleness_s, boot::kHeartbeatStalenessS, 1, 7 * 24 * 3600, PGC_SUSET,
	                        GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.rescue_interval", "How often expired and stale attempts are rescued.", NULL,
	                        &awa_rescue_interval_ms, boot::kRescueIntervalMs, 10, 3600 * 1000, PGC_SIGHUP, GUC_UNIT_MS,
	                        NULL, NULL, NULL);
	DefineCustomIntVariable("awa.rescue_batch_size", "Attempts rescued per tick at most.", NULL,
	                        &awa_rescue_batch_size, boot::kRescueBatchSize, 1, 100000, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.dlq_retention", "Age at which dead-lettered jobs are deleted.", NULL,
	                        &awa_dlq_retention_s, boot::kDlqRetentionS, 1, INT_MAX, PGC_SUSET, GUC_UNIT_S, NULL, NULL,
	                        NULL);
	DefineCustomIntVariable("awa.history_retention",
	                        "How long a finished job (completed, failed, cancelled) stays visible to awa.get_job "
	                        "and counted by awa.queue_counts.",
	                        "At least this long after it finished, at most this plus one history slot "
	                        "(retention / 6 with the default 8 slots); 0 keeps a finished job only until its "
	                        "queue-ring slot is reclaimed.",
	                        &awa_history_retention_s, boot::kHistoryRetentionS, 0, 30 * 24 * 3600, PGC_SUSET,
	                        GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.carry_max_rows",
	                        "Available rows above which a queue slot stays out of the ring's rotation instead of "
	                        "being copied forward by its prune.",
	                        "At most (partitions - slot count) + slot count / 2 - 1 slots stay out (23 of "
	                        "32 partitions with the defaults, 7 of a fixed ring of 16); a kept slot is copied "
	                        "forward once its live rows fall to this (docs/maintenance.md, section 3.6).",
	                        &awa_carry_max_rows, boot::kCarryMaxRows, 0, INT_MAX, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.cleanup_interval", "How often DLQ retention runs.", NULL, &awa_cleanup_interval_s,
	                        boot::kCleanupIntervalS, 1, 24 * 3600, PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.lane_reclaim_after",
	                        "How long a drained lane stays idle before maintenance deletes its row.",
	                        "-1: never; 0: as soon as no row of the lane is left in the queue ring "
	                        "(docs/architecture.md, \"A drained, idle lane's row is reclaimed\").",
	                        &awa_lane_reclaim_after_s, boot::kLaneReclaimAfterS, -1, INT_MAX, PGC_SUSET, GUC_UNIT_S,
	                        NULL, NULL, NULL);
	DefineCustomIntVariable("awa.cleanup_batch_size", "Dead letters deleted per retention tick at most.", NULL,
	                        &awa_cleanup_batch_size, boot::kCleanupBatchSize, 1, 1000000, PGC_SUSET, 0, NULL, NULL,
	                        NULL);
	DefineCustomIntVariable("awa.launcher_naptime",
	                        "How long the launcher waits before it looks again whether a database without awa has it.",
	                        "CREATE EXTENSION awa wakes it at once; this catches databases created from a template "
	                        "that has awa.",
	                        &awa_launcher_naptime_s, boot::kLauncherNaptimeS, 1, 3600, PGC_SIGHUP, GUC_UNIT_S, NULL,
	                        NULL, NULL);
}

void
_PG_init(void)
{
	DefineCustomBoolVariable(
	    "awa.async_claim_commit", "Commits claims that run in their own transaction asynchronously.",
	    "A claim in an implicit transaction commits with synchronous_commit = off, so the lane lock "
	    "is not held across a WAL flush. Inside an explicit transaction block the caller's setting stands.",
	    &awa_async_claim_commit, boot::kAsyncClaimCommit, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable(
	    "awa.early_lane_release", "Releases a lane's claim lock before the claim commits.",
	    "A claim records its planned lanes in the shared-memory in-flight registry and releases the lane "
	    "lock at once, so the lane is free for the next claimer before this claim commits. Off: the lane "
	    "lock is held until the claim's transaction ends, and other claimers skip the lane meanwhile (the "
	    "reference design's behaviour).",
	    &awa_early_lane_release, boot::kEarlyLaneRelease, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable(
	    "awa.lane_wait_timeout", "How long a claim waits for a lane another claimer is planning.",
	    "A claim that found every lane with work busy waits this long at most for one of them, instead of "
	    "returning nothing; a claimer holds a lane only while it plans, unless the in-flight registry is off "
	    "or full. 0 never waits (a busy lane is skipped).",
	    &awa_lane_wait_timeout_ms, boot::kLaneWaitTimeoutMs, 0, 60000, PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable(
	    "awa.gap_proof_lock_timeout", "How long a claim waits to prove a lane gap dead.",
	    "A claim that finds a missing lane below a committed one waits up to this long for the lane's "
	    "in-flight enqueues to end; 0 only tries.",
	    &awa_gap_proof_lock_timeout_ms, boot::kGapProofLockTimeoutMs, 0, 60000, PGC_USERSET, GUC_UNIT_MS, NULL, NULL,
	    NULL);
	DefineCustomIntVariable("awa.ring_spare_slots",
	                        "Spare slots CREATE EXTENSION creates in the queue and claim rings, beyond their slot counts.",
	                        "A slot that an open transaction still holds, or that keeps a large backlog, is left out of "
	                        "reuse and the ring takes a spare one (docs/maintenance.md, section 2); at most 64 queue "
	                        "slots and 16 claim slots in all.",
	                        &awa_ring_spare_slots, boot::kRingSpareSlots, 0, 60, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.ring_max_slots",
	                        "Most slots the queue and claim rings use while slots are left out of reuse.",
	                        "Never fewer than a ring's slot count nor more than its partitions; a rotation that finds "
	                        "every one of them in use is skipped and logs a WARNING (docs/maintenance.md, section 2).",
	                        &awa_ring_max_slots, boot::kRingMaxSlots, 2, 64, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.queue_slot_count", "Queue-ring slots created by CREATE EXTENSION.", NULL,
	                        &awa_queue_slot_count, boot::kQueueSlotCount, 4, 64, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.claim_slot_count", "Claim-ring slots created by CREATE EXTENSION.", NULL,
	                        &awa_claim_slot_count, boot::kClaimSlotCount, 2, 16, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.lease_slot_count", "Lease-ring slots created by CREATE EXTENSION.", NULL,
	                        &awa_lease_slot_count, boot::kLeaseSlotCount, 2, 64, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.history_slot_count", "History-ring slots created by CREATE EXTENSION.", NULL,
	                        &awa_history_slot_count, boot::kHistorySlotCount, 4, 64, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.max_lanes", "Lanes that can have claims in flight at the same moment (shared memory).",
	                        "An entry lives while a claim of its lane is in flight, whatever the number of lanes; "
	                        "a claim that finds the registry full keeps its lane lock until it ends.",
	                        &awa_max_lanes, boot::kMaxLanes, 16, 1 << 20, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.max_queues", "Queues whose job counts are kept in shared memory, all databases together.",
	                        "The counters grow with the queues (dynamic shared memory, about 520 bytes each); beyond "
	                        "this cap awa.queue_counts counts exactly (its cost then grows with the backlog).",
	                        &awa_max_queues, boot::kMaxQueues, 16, INT_MAX, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.max_queues_per_database",
	                        "Queues of one database whose job counts are kept in shared memory (its share of awa.max_queues).",
	                        "So that one database cannot take the whole counter table: beyond its share only that "
	                        "database's awa.queue_counts counts exactly.",
	                        &awa_max_queues_per_database, boot::kMaxQueuesPerDatabase, 16, INT_MAX, PGC_SIGHUP, 0, NULL,
	                        NULL, NULL);
	DefineCustomIntVariable("awa.max_counted_databases",
	                        "Databases whose job counts are kept in shared memory at once.",
	                        "A dropped database frees its place; a database beyond the limit counts exactly.",
	                        &awa_max_counted_databases, boot::kMaxCountedDatabases, 1, 65536, PGC_POSTMASTER, 0, NULL,
	                        NULL, NULL);
	DefineCustomIntVariable("awa.max_keyed_queues",
	                        "Priorities of queues with keyed jobs whose keys claims share in shared memory, all "
	                        "databases together.",
	                        "Each priority of a queue that has jobs with opts.concurrency_key takes one (src/pg/key_lanes.hpp); "
	                        "one database takes at most half. Beyond, claims of such a queue read all its keyed "
	                        "lanes (their cost grows with the keys).",
	                        &awa_max_keyed_queues, boot::kMaxKeyedQueues, 2, 4096, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("awa.max_keys_per_queue",
	                        "Keys with work that claims share, per priority of a queue (shared memory, about 160 bytes each).",
	                        "An enqueue that would give one more key work is refused with SQLSTATE 53200.",
	                        &awa_max_keys_per_queue, boot::kMaxKeysPerQueue, 16, 1 << 22, PGC_POSTMASTER, 0, NULL,
	                        NULL, NULL);
	// Limits on what a producer may enqueue (docs/operations.md). SUSET: a
	// producer must not be able to lift them for itself; a superuser sets them
	// in the configuration, per role or database, or per session.
	DefineCustomIntVariable("awa.max_job_bytes", "Largest job accepted by an enqueue: its args and metadata.",
	                        "The size of args plus that of the stored options (metadata, tags), as PostgreSQL holds "
	                        "them uncompressed. A larger job is refused with SQLSTATE 54000.",
	                        &awa_max_job_bytes, boot::kMaxJobBytes, 1024, 1024 * 1024 * 1024, PGC_SUSET, GUC_UNIT_BYTE,
	                        NULL, NULL, NULL);
	DefineCustomIntVariable("awa.max_call_bytes", "Largest sum of job sizes accepted by one awa.enqueue_many call.",
	                        "Counted as awa.max_job_bytes counts a job; a larger call is refused with SQLSTATE 54000.",
	                        &awa_max_call_bytes, boot::kMaxCallBytes, 1024, INT_MAX, PGC_SUSET, GUC_UNIT_BYTE, NULL,
	                        NULL, NULL);
	DefineCustomIntVariable(
	    "awa.debug_counter_rebuild_lock", "Test hook: the counter rebuild waits for this advisory lock.",
	    "When not 0, a counter rebuild takes pg_advisory_xact_lock(value) after it has published its "
	    "snapshot and before its exact pass, so a test can commit transactions during the pass.",
	    &awa_debug_counter_rebuild_lock, boot::kDebugCounterRebuildLock, 0, INT_MAX, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable(
	    "awa.debug_head_walk_lock", "Test hook: awa.queue_metrics' walk of a lane head waits for this advisory lock.",
	    "When not 0, awa.queue_metrics takes pg_advisory_xact_lock(value) after it has walked a lane whose head "
	    "was not kept and before it keeps the result, so a test can commit transactions in between.",
	    &awa_debug_head_walk_lock, boot::kDebugHeadWalkLock, 0, INT_MAX, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable(
	    "awa.debug_counts_read_lock",
	    "Test hook: awa.queue_counts and awa.queue_metrics wait for this advisory lock before they read the counters.",
	    "When not 0, they take pg_advisory_xact_lock(value) after they found the counters trusted and before they "
	    "read them, so a test can make the counters untrusted in between.",
	    &awa_debug_counts_read_lock, boot::kDebugCountsReadLock, 0, INT_MAX, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable(
	    "awa.debug_clock_offset", "Test hook: added to the maintenance worker's readings of the wall clock.",
	    "For tests only (test/t/027_clock_jumps.pl): stands in for setting the system clock by this much, as the "
	    "worker sees it; SQL run by its steps still reads the real clock. Leave at 0.",
	    &awa_debug_clock_offset_s, boot::kDebugClockOffsetS, -10 * 366 * 24 * 3600, 10 * 366 * 24 * 3600, PGC_SIGHUP,
	    GUC_UNIT_S | GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	DefineMaintenanceVariables();
	MarkGUCPrefixReserved("awa");
	awa::pg::InstallQueueSettingsCache();
	// Shared memory and (sub)transaction callbacks, in one order (callbacks.cpp).
	awa::pg::InstallCallbacks(process_shared_preload_libraries_in_progress);
	if (process_shared_preload_libraries_in_progress) {
		awa::pg::InstallDatabaseDdlHook();
		if (!IsBinaryUpgrade)
			awa::pg::RegisterMaintenanceLauncher();
	}
}
