// fn_metrics.cpp: awa's metrics surface (docs/monitoring.md): per queue its
// counts, oldest available job, waiting claims and pause (awa.queue_metrics),
// event totals per queue, and the claims waiting for work.
#include "pg/core_calls.hpp"
#include "pg/subtransaction.hpp"
#include "pg/claim_walk.hpp"
#include "pg/claim_waiters.hpp"
#include "pg/counters.hpp"
#include "pg/guard.hpp"
#include "pg/gucs.hpp"
#include "pg/lanes.hpp"
#include "pg/ring_truncations.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "catalog/pg_collation_d.h"
#include "utils/varlena.h"
}

namespace awa::pg {

namespace {

using core::kJobStateCount;

struct MetricsRow {
	text *queue;
	int64 counts[kJobStateCount];
};

int
CompareNames(const void *a, const void *b)
{
	return strcmp(*static_cast<char *const *>(a), *static_cast<char *const *>(b));
}

int
CompareRows(const void *a, const void *b)
{
	const MetricsRow &x = *static_cast<const MetricsRow *>(a);
	const MetricsRow &y = *static_cast<const MetricsRow *>(b);
	return varstr_cmp(VARDATA_ANY(x.queue), VARSIZE_ANY_EXHDR(x.queue), VARDATA_ANY(y.queue),
	                  VARSIZE_ANY_EXHDR(y.queue), DEFAULT_COLLATION_OID);
}

// A queue with a concurrency or rate limit. Its name comes first:
// CompareNames compares the char * at the start of each element.
struct Limited {
	char *name;
	int32 max_running;  // 0: none
	text *rate_limit;   // 'N per <interval>'; NULL: none
	int32 burst;
};

bool
Listed(char **sorted, int count, const char *name)
{
	return count > 0 && bsearch(&name, sorted, count, sizeof(char *), CompareNames) != NULL;
}

// The run_at of the queue's oldest available job: the earliest head of its
// lanes (counters.hpp). Kept heads cost nothing; a lane whose head is not
// kept is walked (LaneHeadNow) and the result kept, unless an event was
// applied to the queue meanwhile (`heads`, read before the walk, when `kept`;
// a transaction with its own pending moves of the queue walks every lane and
// keeps nothing). Requires SPI.
bool
OldestAvailableAt(text *queue, const QueueHeads &heads, bool kept, RingPositions *ring, bool *have_ring,
                  TimestampTz *out)
{
	Lane lanes[kMaxLanesPerQueue];
	int lane_count = -1;
	bool found = false;
	TimestampTz oldest = 0;
	for (int priority = 1; priority <= kHeadLanes; priority++) {
		LaneHead head = kept && heads.storable ? heads.lanes[priority - 1] : LaneHead{kHeadUnknown, 0, 0};
		if (head.state == kHeadUnknown) {
			if (lane_count < 0)
				lane_count = LanesOfQueue(queue, lanes);
			const Lane *lane = NULL;
			for (int i = 0; i < lane_count; i++)
				if (lanes[i].priority == priority)
					lane = &lanes[i];
			if (lane == NULL) {
				head = LaneHead{kHeadEmpty, 0, 0};
			} else {
				if (!*have_ring) {
					int64 epoch;
					*ring = CurrentRings(&epoch);
					*have_ring = true;
				}
				bool fallback;
				head = LaneHeadNow(queue, *lane, *ring, &fallback);
				if (fallback) {
					// More claim evidence above the cursor than the walk reads:
					// the SQL walk, not kept.
					Datum values[1] = {PointerGetDatum(queue)};
					Execute(Stmt::kOldestAvailableSql, 0, values, NULL);
					bool isnull = true;
					Datum at = SPI_processed == 1 ? SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)
					                              : (Datum)0;
					if (isnull)
						return false;
					*out = DatumGetTimestampTz(at);
					return true;
				}
			}
			if (kept && heads.storable) {
				if (lane != NULL && awa_debug_head_walk_lock != 0)
					(void)DirectFunctionCall1(pg_advisory_xact_lock_int8, Int64GetDatum(awa_debug_head_walk_lock));
				StoreHead(queue, priority, heads.generation, head);
			}
		}
		if (head.state == kHeadKnown && (!found || head.run_at < oldest)) {
			oldest = head.run_at;
			found = true;
		}
	}
	*out = oldest;
	return found;
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa.queue_metrics() -> (queue, available, scheduled, retryable, running,
// completed, failed, cancelled, dlq, oldest_available_at,
// oldest_available_age_seconds, waiting_claims, paused, max_running,
// claims_limited, rate_limit, burst, claims_rate_limited): one row per queue,
// ordered by name. Its cost grows with the queues, not the backlog, and a
// queue whose lane heads are kept costs no statement at all.
namespace {

// One row of awa.queue_metrics, built before it is returned.
constexpr int kMetricsColumns = 18;
struct MetricsOut {
	Datum values[kMetricsColumns];
	bool nulls[kMetricsColumns];
};

// The rows of awa.queue_metrics (in CurrentMemoryContext). Requires SPI.
int
CollectMetrics(MetricsOut **result, bool *held)
{
	// The claims waiting, by queue name (sorted, counted by bsearch).
	ClaimWaiter *waiters;
	int waiter_count = ListClaimWaiters(&waiters);
	char **waiting = static_cast<char **>(palloc(sizeof(char *) * (waiter_count + 1)));
	for (int i = 0; i < waiter_count; i++)
		waiting[i] = waiters[i].queue;
	qsort(waiting, waiter_count, sizeof(char *), CompareNames);
	// The paused queues, and the queues with a concurrency or rate limit
	// (sorted by name for bsearch).
	Execute(Stmt::kPausedQueues, 0, NULL, NULL);
	int paused_count = 0;
	int limited_count = 0;
	char **paused = static_cast<char **>(palloc(sizeof(char *) * (SPI_processed + 1)));
	Limited *limited = static_cast<Limited *>(palloc(sizeof(Limited) * (SPI_processed + 1)));
	for (uint64 i = 0; i < SPI_processed; i++) {
		bool isnull;
		char *name = TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull)))
			paused[paused_count++] = name;
		Limited limit{name, 0, NULL, 0};
		Datum max_running = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3, &isnull);
		if (!isnull)
			limit.max_running = DatumGetInt32(max_running);
		Datum rate = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 4, &isnull);
		if (!isnull) {
			limit.rate_limit = DatumGetTextPCopy(rate);
			limit.burst = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 5, &isnull));
		}
		if (limit.max_running > 0 || limit.rate_limit != NULL)
			limited[limited_count++] = limit;
	}
	qsort(paused, paused_count, sizeof(char *), CompareNames);
	qsort(limited, limited_count, sizeof(Limited), CompareNames);
	// The queues and their counts (copied: the walks below run statements).
	bool trusted = EnsureCountersTrusted();
	if (trusted)
		Execute(Stmt::kQueueList, 0, NULL, NULL);
	else {
		Datum all[1] = {(Datum)0};
		// The ring tables first, before the pass's snapshot (as
		// awa.queue_counts' exact pass, fn_counts.cpp).
		Execute(Stmt::kHoldRings, 0, NULL, NULL);
		*held = true;
		Execute(Stmt::kCountsScanOne, 0, all, "n");
	}
	int count = static_cast<int>(SPI_processed);
	MetricsRow *rows = static_cast<MetricsRow *>(palloc(sizeof(MetricsRow) * (count + 1)));
	MetricsOut *out = static_cast<MetricsOut *>(palloc0(sizeof(MetricsOut) * (count + 1)));
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();  // every loop over rows can be cancelled
		HeapTuple tuple = SPI_tuptable->vals[i];
		bool isnull;
		rows[i].queue = DatumGetTextPCopy(SPI_getbinval(tuple, SPI_tuptable->tupdesc, 1, &isnull));
		if (!trusted)
			for (int s = 0; s < kJobStateCount; s++)
				rows[i].counts[s] = DatumGetInt64(SPI_getbinval(tuple, SPI_tuptable->tupdesc, s + 2, &isnull));
	}
	if (!trusted)
		qsort(rows, count, sizeof(MetricsRow), CompareRows);
	TimestampTz now = GetCurrentTimestamp();
	RingPositions ring;
	bool have_ring = false;
	constexpr int kAvailable = static_cast<int>(awa::core::JobState::kAvailable);
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();
		MetricsRow &row = rows[i];
		// The heads before the counts: a commit applied after this reading
		// moves the generation, so nothing read here is kept stale.
		QueueHeads heads;
		bool kept = ReadHeads(row.queue, &heads);
		// Counts read from the counters; they may have stopped being trusted
		// since the check above: then this queue is counted exactly, and
		// nothing is concluded from its counts (they read zeros before).
		bool counted = false;
		if (trusted) {
			if (i == 0 && awa_debug_counts_read_lock != 0)
				(void)DirectFunctionCall1(pg_advisory_xact_lock_int8, Int64GetDatum(awa_debug_counts_read_lock));
			QueueCounts counts;
			counted = ReadCounters(row.queue, &counts);
			if (counted) {
				memcpy(row.counts, counts.count, sizeof(row.counts));
			} else {
				Datum key[1] = {PointerGetDatum(row.queue)};
				Execute(Stmt::kHoldRings, 0, NULL, NULL);
				*held = true;
				Execute(Stmt::kCountsScanOne, 0, key, NULL);
				memset(row.counts, 0, sizeof(row.counts));
				if (SPI_processed > 0)
					for (int s = 0; s < kJobStateCount; s++) {
						bool isnull;
						row.counts[s] =
						    DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, s + 2, &isnull));
					}
			}
		}
		char *name = text_to_cstring(row.queue);
		TimestampTz oldest = 0;
		bool has_oldest = false;
		if (row.counts[kAvailable] > 0) {
			has_oldest = OldestAvailableAt(row.queue, heads, kept, &ring, &have_ring, &oldest);
			// Counted available but no head kept: a kept value can lag the
			// counts only between two commits' callbacks; look afresh.
			if (!has_oldest && kept)
				has_oldest = OldestAvailableAt(row.queue, heads, false, &ring, &have_ring, &oldest);
			// A paused queue's parked jobs (deferred rows in state
			// available) are in no lane: one probe of their index.
			if (Listed(paused, paused_count, name)) {
				Datum key[1] = {PointerGetDatum(row.queue)};
				Execute(Stmt::kOldestParked, 0, key, NULL, 1);
				bool isnull = true;
				Datum parked = SPI_processed == 1
				                   ? SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)
				                   : (Datum)0;
				if (!isnull && (!has_oldest || DatumGetTimestampTz(parked) < oldest)) {
					oldest = DatumGetTimestampTz(parked);
					has_oldest = true;
				}
			}
		} else if (counted && kept && heads.storable) {
			// Nothing available (trusted counts): every lane is empty.
			for (int priority = 1; priority <= kHeadLanes; priority++)
				if (heads.lanes[priority - 1].state == kHeadUnknown)
					StoreHead(row.queue, priority, heads.generation, LaneHead{kHeadEmpty, 0, 0});
		}
		int64 waiting_claims = 0;
		if (waiter_count > 0) {
			char **hit = static_cast<char **>(bsearch(&name, waiting, waiter_count, sizeof(char *), CompareNames));
			if (hit != NULL) {
				char **first = hit, **last = hit;
				while (first > waiting && strcmp(first[-1], name) == 0)
					first--;
				while (last + 1 < waiting + waiter_count && strcmp(last[1], name) == 0)
					last++;
				waiting_claims = last - first + 1;
			}
		}
		Datum *values = out[i].values;
		bool *nulls = out[i].nulls;
		values[0] = PointerGetDatum(row.queue);
		for (int s = 0; s < kJobStateCount; s++)
			values[1 + s] = Int64GetDatum(row.counts[s]);
		nulls[9] = !has_oldest;
		values[9] = TimestampTzGetDatum(oldest);
		values[10] = Float8GetDatum(has_oldest ? Max(static_cast<double>(now - oldest) / USECS_PER_SEC, 0.0) : 0.0);
		values[11] = Int64GetDatum(waiting_claims);
		values[12] = BoolGetDatum(Listed(paused, paused_count, name));
		const Limited *limit = limited_count > 0 ? static_cast<const Limited *>(bsearch(
		                                               &name, limited, limited_count, sizeof(Limited), CompareNames))
		                                         : NULL;
		nulls[13] = limit == NULL || limit->max_running <= 0;
		values[13] = Int32GetDatum(nulls[13] ? 0 : limit->max_running);
		values[14] = Int64GetDatum(ReadClaimsLimited(row.queue));
		nulls[15] = nulls[16] = limit == NULL || limit->rate_limit == NULL;
		values[15] = nulls[15] ? (Datum)0 : PointerGetDatum(limit->rate_limit);
		values[16] = Int32GetDatum(nulls[16] ? 0 : limit->burst);
		values[17] = Int64GetDatum(ReadClaimsRateLimited(row.queue));
		pfree(name);
	}
	*result = out;
	return count;
}

}  // namespace

AWA_FUNCTION(awa_queue_metrics)
{
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	// The reads run in an internal subtransaction that is rolled back once
	// the rows are built: the ring children they lock (a lane head's walk,
	// an exact count) are released then, not at the end of the caller's
	// transaction, so a monitoring session left idle in its transaction
	// holds no ring slot (docs/maintenance.md, "Held"; test/sql/metrics_oldest.sql).
	// It writes nothing transactional (heads and counters live in shared
	// memory). The rows are built in this (SPI) context, which outlives the
	// subtransaction, and stored after it, so that a tuplestore that spills
	// to a temporary file does not lose it with the subtransaction.
	MetricsOut *out = NULL;
	MetricsOut **result = &out;
	// Kept instead (released into the caller's transaction, with its locks)
	// only when an exact pass read the rings under REPEATABLE READ where
	// their locks must stay (no preload, or a standby: RingLocksReleasable),
	// as awa.queue_counts' pass is (found in review).
	int count = 0;
	int *count_out = &count;
	(void)RunInSubtransaction(CurrentMemoryContext, true, [result, count_out]() {
		bool held = false;
		*count_out = CollectMetrics(result, &held);
		return held && !RingLocksReleasable() ? 1 : 0;
	});
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out[i].values, out[i].nulls);
	}
	SPI_finish();
	return (Datum)0;
}

// awa._lane_heads(queue) -> (priority, state, lane_seq, run_at): the lane
// heads kept for the queue (tests): state is unknown, empty or known; no rows
// when the queue has no shared entry (or is NULL).
AWA_FUNCTION(awa_lane_heads)
{
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	QueueHeads heads;
	if (PG_ARGISNULL(0) || !ReadHeads(PG_GETARG_TEXT_PP(0), &heads))
		return (Datum)0;
	static const char *const kStates[] = {"unknown", "empty", "known"};
	for (int l = 0; l < kHeadLanes; l++) {
		const LaneHead &head = heads.lanes[l];
		Datum values[4] = {Int32GetDatum(l + 1), CStringGetTextDatum(kStates[head.state]), Int64GetDatum(head.seq),
		                   TimestampTzGetDatum(head.run_at)};
		bool nulls[4] = {false, false, head.state != kHeadKnown, head.state != kHeadKnown};
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum)0;
}

// awa._oldest_unknown_queues() -> the queues of this database whose oldest
// available job is not kept in shared memory now (a lane head unknown), as
// awa.queue_metrics would find them: they are walked at its next call.
AWA_FUNCTION(awa_oldest_unknown_queues)
{
	PG_RETURN_INT64(CountUnknownHeads());
}

// awa.job_event_totals() -> (queue, enqueued, claimed, completed, retried,
// snoozed, failed, rescued): the jobs of each queue each event moved since the
// server started. Queues without an event since then are not listed.
AWA_FUNCTION(awa_job_event_totals)
{
	static_assert(awa::core::kJobEventCount == 7, "awa.job_event_totals lists seven events");
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	QueueEventTotals *rows;
	int count = ReadEventTotals(&rows);
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();  // a copy: counters_lock is not held here
		// A queue has a counter entry once anything counted it (a counter
		// rebuild makes one for every queue); only events list it here.
		bool any = false;
		for (int e = 0; e < awa::core::kJobEventCount; e++)
			any = any || rows[i].totals[e] != 0;
		if (!any)
			continue;
		Datum values[1 + awa::core::kJobEventCount];
		bool nulls[1 + awa::core::kJobEventCount] = {false};
		values[0] = CStringGetTextDatum(rows[i].queue);
		for (int e = 0; e < awa::core::kJobEventCount; e++)
			values[1 + e] = Int64GetDatum(rows[i].totals[e]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum)0;
}

// awa.waiting_claims() -> (pid, queue, waiting_since): the claims of this
// database sleeping for work now.
AWA_FUNCTION(awa_waiting_claims)
{
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	ClaimWaiter *waiters;
	int count = ListClaimWaiters(&waiters);
	for (int i = 0; i < count; i++) {
		Datum values[3] = {Int32GetDatum(waiters[i].pid), CStringGetTextDatum(waiters[i].queue),
		                   TimestampTzGetDatum(waiters[i].since)};
		bool nulls[3] = {false};
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum)0;
}
