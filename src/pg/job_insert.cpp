// job_insert.cpp: see job_insert.hpp.
#include "pg/job_insert.hpp"

#include "pg/core_calls.hpp"
#include "pg/counters.hpp"
#include "pg/job_options.hpp"
#include "pg/key_lanes.hpp"
#include "pg/direct_insert.hpp"
#include "pg/lane_cursors.hpp"
#include "pg/lane_scan.hpp"
#include "pg/lanes.hpp"
#include "pg/pending_enqueues.hpp"
#include "pg/queue_settings.hpp"
#include "pg/enqueue_generations.hpp"
#include "pg/ring_epoch.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"
#include "pg/wakeups.hpp"

#include <cstdlib>

namespace awa::pg {

namespace {

using core::JobState;

// Reserves one lane_seq per job (in order) and returns the ring position that
// held at the reservation instant. The epoch bracket (rings.hpp) makes ready
// generations non-decreasing along a lane without any lock shared by
// enqueuers; the reservation takes the lane reserve lock (or, past 16 lanes,
// the wide reserve lock), held until this
// transaction ends, which is what a claim's gap proof waits for
// (lane_locks.hpp). If a rotation committed during the reservation,
// the reserved lane_seqs are abandoned (they become gaps that claims prove
// dead once this transaction ends) and the reservation is made again.
//
// A lane whose row is gone (maintenance reclaimed it, drained and idle, after
// this backend had cached it: fn_reclaim_lanes.cpp) is found again by its
// identity, which makes a new one, and the reservation made there; *lane is
// the lane reserved in.
RingPositions
ReserveLaneSeqs(Lane *lane, text *queue, int16 priority, text *key, int count, int64 *lane_seqs)
{
	// This transaction sees its own, uncommitted ring generation; other
	// sessions reserving after it would write the older one, and generations
	// would decrease along the lane (docs/maintenance.md §5.3).
	if (RotationInThisTransaction())
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa: cannot enqueue in a transaction that rotated a ring"),
		                errhint("Run awa.run_maintenance in a transaction of its own.")));
	for (;;) {
		int64 epoch;
		RingPositions ring = CurrentRings(&epoch);
		// Until the rows are in (and their child locked), prune must not
		// truncate this generation (enqueue_generations.hpp).
		PublishEnqueueGeneration(ring.queue_generation);
		// An error here aborts the transaction, whose callback clears the
		// published generation.
		if (count > 0) {
			int64 first = ReserveLanePositions(*lane, count);
			if (first == 0) {
				*lane = RefindLane(queue, priority, key);
				continue;
			}
			for (int i = 0; i < count; i++)
				lane_seqs[i] = first + i;
		}
		if (epoch % 2 == 0 && RingEpoch() == epoch)
			return ring;
		if (ReadRingPositions().queue_generation == ring.queue_generation)
			return ring;
	}
}

bool
SameText(text *a, text *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
	       memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

int
CompareText(text *x, text *y)
{
	int length_x = VARSIZE_ANY_EXHDR(x), length_y = VARSIZE_ANY_EXHDR(y);
	int c = memcmp(VARDATA_ANY(x), VARDATA_ANY(y), Min(length_x, length_y));
	if (c != 0)
		return c;
	return length_x == length_y ? 0 : (length_x < length_y ? -1 : 1);
}

// Concurrency keys: NULL (no key) first.
int
CompareKeys(text *x, text *y)
{
	if (x == NULL || y == NULL)
		return x == y ? 0 : (x == NULL ? -1 : 1);
	return CompareText(x, y);
}

bool
SameLane(const JobRow &a, const JobRow &b)
{
	return a.priority == b.priority && SameText(a.queue, b.queue) && CompareKeys(a.concurrency_key, b.concurrency_key) == 0;
}

const JobRow *sort_rows;
int
CompareLanes(const void *a, const void *b)
{
	const JobRow &x = sort_rows[*static_cast<const int *>(a)];
	const JobRow &y = sort_rows[*static_cast<const int *>(b)];
	int c = CompareText(x.queue, y.queue);
	if (c != 0)
		return c;
	if (x.priority != y.priority)
		return x.priority < y.priority ? -1 : 1;
	c = CompareKeys(x.concurrency_key, y.concurrency_key);
	if (c != 0)
		return c;
	int pa = *static_cast<const int *>(a), pb = *static_cast<const int *>(b);
	return pa < pb ? -1 : (pa > pb ? 1 : 0);  // input order within a lane
}

// Takes the unique key of every row that has one, in input order, and returns
// how many rows were skipped as duplicates. The insert is PostgreSQL's
// speculative insertion (ON CONFLICT DO NOTHING): a key whose holder has not
// committed waits for that transaction, as a unique index does, and takes the
// key if it rolls back; no subtransaction is started. A key held by another
// job (committed, or an earlier row of this call) raises 23505, or, for a row
// with skip_duplicate, replaces the row's job_id with the holder's and marks it
// skipped. A holder that left the key between the insert and the look-up
// (its completion committed in between) is no holder: the insert is tried
// again.
int
ClaimUniqueKeys(JobRow *rows, int n, TimestampTz now)
{
	int skipped = 0;
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		if (rows[i].unique_key == NULL)
			continue;
		for (;;) {
			CHECK_FOR_INTERRUPTS();
			Datum values[4] = {PointerGetDatum(rows[i].unique_key), Int64GetDatum(rows[i].job_id),
			                   Int16GetDatum(rows[i].unique_states), TimestampTzGetDatum(now)};
			Execute(Stmt::kClaimUnique, 0, values, NULL);
			if (SPI_processed == 1)
				break;
			Datum key[1] = {PointerGetDatum(rows[i].unique_key)};
			ExecuteLatest(Stmt::kUniqueHolder, 0, key, NULL, 1);
			bool isnull = true;
			int64 holder = SPI_processed == 1 ? DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) : 0;
			if (!isnull && holder == rows[i].job_id)
				break;  // the job holds its own key already
			if (rows[i].skip_duplicate) {
				if (isnull)
					continue;  // the holder let the key go meanwhile: take it
				rows[i].job_id = holder;
				rows[i].skipped = true;
				skipped++;
				break;
			}
			ereport(ERROR, (errcode(ERRCODE_UNIQUE_VIOLATION),
			                errmsg("a job with the same unique key already exists"),
			                isnull ? 0 : errdetail("Job " INT64_FORMAT " holds the key.", holder),
			                errhint("A unique job blocks duplicates while it is in one of its unique states; "
			                        "nothing was enqueued.")));
		}
	}
	return skipped;
}

Datum
Int64Array(const Datum *values, int n)
{
	return PointerGetDatum(construct_array(const_cast<Datum *>(values), n, INT8OID, 8, true, TYPALIGN_DOUBLE));
}

struct Columns {
	Datum *job_ids, *kinds, *args, *run_ats, *run_leases, *attempts, *max_attempts, *created_ats, *unique_keys,
	    *unique_states, *payloads, *priorities, *lane_seqs;
	bool *unique_nulls, *payload_nulls;
};

Columns
AllocColumns(int n)
{
	Columns c;
	Datum **all[] = {&c.job_ids,      &c.kinds,      &c.args,          &c.run_ats,  &c.run_leases,
	                 &c.attempts,     &c.max_attempts, &c.created_ats, &c.unique_keys, &c.unique_states,
	                 &c.payloads,     &c.priorities, &c.lane_seqs};
	for (Datum **column : all)
		*column = static_cast<Datum *>(palloc0(sizeof(Datum) * (n + 1)));
	c.unique_nulls = static_cast<bool *>(palloc0(sizeof(bool) * (n + 1)));
	c.payload_nulls = static_cast<bool *>(palloc0(sizeof(bool) * (n + 1)));
	return c;
}

void
FillColumns(Columns *c, int k, const JobRow &row)
{
	c->job_ids[k] = Int64GetDatum(row.job_id);
	c->kinds[k] = PointerGetDatum(row.kind);
	c->args[k] = PointerGetDatum(row.args);
	c->run_ats[k] = TimestampTzGetDatum(row.run_at);
	c->run_leases[k] = Int64GetDatum(row.run_lease);
	c->attempts[k] = Int16GetDatum(row.attempt);
	c->max_attempts[k] = Int16GetDatum(row.max_attempts);
	c->created_ats[k] = TimestampTzGetDatum(row.created_at);
	c->unique_nulls[k] = row.unique_key == NULL;
	c->unique_keys[k] = PointerGetDatum(row.unique_key);
	c->unique_states[k] = Int16GetDatum(row.unique_states);
	c->payload_nulls[k] = row.payload == NULL;
	c->payloads[k] = PointerGetDatum(row.payload);
	c->priorities[k] = Int16GetDatum(row.priority);
}

Datum
Array(Datum *values, bool *nulls, int n, Oid type, int length, bool byval, char align)
{
	int dims[1] = {n};
	int lbs[1] = {1};
	return PointerGetDatum(construct_md_array(values, nulls, 1, dims, lbs, type, length, byval, align));
}

// Appends one lane's rows (positions order[0..n) of rows) as ready rows.
void
InsertLaneRows(JobRow *rows, const int *order, int n, TimestampTz now)
{
	const JobRow &head = rows[order[0]];
	// Claims waiting on the queue look again when this transaction ends.
	WakeQueueAtEnd(head.queue);
	Lane lane = EnsureLane(head.queue, head.priority, head.concurrency_key);
	int64 *lane_seqs = static_cast<int64 *>(palloc(sizeof(int64) * (n + 1)));
	RingPositions ring = ReserveLaneSeqs(&lane, head.queue, head.priority, head.concurrency_key, n, lane_seqs);
	// Direct inserts, no statement: the rows with one multi-insert. A ready
	// row is its own committed range for the claim walk: nothing else is
	// written per job (kReadyColumns: lane_scan.hpp).
	Datum *ready = static_cast<Datum *>(palloc(sizeof(Datum) * kReadyColumns * n));
	bool *ready_nulls = static_cast<bool *>(palloc0(sizeof(bool) * kReadyColumns * n));
	int lowest = 0;  // the row with the lowest lane_seq (the lane's head, if it is the first)
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		const JobRow &row = rows[order[i]];
		if (lane_seqs[i] < lane_seqs[lowest])
			lowest = i;
		Datum *v = ready + i * kReadyColumns;
		bool *nl = ready_nulls + i * kReadyColumns;
		v[0] = Int16GetDatum(ring.queue_slot);
		v[1] = Int16GetDatum(row.priority);
		v[2] = Int16GetDatum(row.attempt);
		v[3] = Int16GetDatum(row.max_attempts);
		v[4] = Int64GetDatum(ring.queue_generation);
		v[5] = Int64GetDatum(lane.lane_id);
		v[6] = Int64GetDatum(lane_seqs[i]);
		v[7] = Int64GetDatum(row.job_id);
		v[8] = TimestampTzGetDatum(row.run_at);
		v[9] = TimestampTzGetDatum(row.created_at);
		v[10] = PointerGetDatum(row.queue);
		v[11] = PointerGetDatum(row.kind);
		v[12] = PointerGetDatum(row.args);
		v[13] = Int64GetDatum(row.run_lease);
		v[14] = (Datum)0;
		nl[14] = true;  // attempted_at
		v[15] = PointerGetDatum(row.unique_key);
		v[16] = Int16GetDatum(row.unique_states);
		nl[15] = nl[16] = row.unique_key == NULL;
		v[17] = PointerGetDatum(row.payload);
		nl[17] = row.payload == NULL;
		v[18] = (Datum)0;
		nl[18] = true;  // origin_generation: this row's own ready_generation
	}
	InsertRingRows(RingTable::kReadyEntries, ring.queue_slot, n, ready, ready_nulls, kReadyColumns);
	if (head.concurrency_key == NULL)
		NoteHeadAdd(head.queue, head.priority, lane_seqs[lowest], rows[order[lowest]].run_at, n);
	else
		NoteKeyedAvailable(head.queue, n);  // the heads are of the lanes without a key
	// The lane has work once this transaction commits (key_lanes.hpp).
	NoteLaneWork(head.queue, lane, head.concurrency_key, rows[order[lowest]].job_id);
}

// Inserts rows[order[0..n)] into deferred_jobs with `state`: scheduled (a
// future run_at: the worker is woken for the earliest) or available (parked).
void
InsertDeferred(JobRow *rows, const int *order, int n, const char *state)
{
	Columns c = AllocColumns(n);
	Datum *queues = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		FillColumns(&c, i, rows[order[i]]);
		queues[i] = PointerGetDatum(rows[order[i]].queue);
	}
	Datum values[14] = {Int64Array(c.job_ids, n),
	                    Array(queues, NULL, n, TEXTOID, -1, false, TYPALIGN_INT),
	                    Array(c.priorities, NULL, n, INT2OID, 2, true, TYPALIGN_SHORT),
	                    Array(c.kinds, NULL, n, TEXTOID, -1, false, TYPALIGN_INT),
	                    Array(c.args, NULL, n, JSONBOID, -1, false, TYPALIGN_INT),
	                    Array(c.run_ats, NULL, n, TIMESTAMPTZOID, 8, true, TYPALIGN_DOUBLE),
	                    Int64Array(c.run_leases, n),
	                    Array(c.attempts, NULL, n, INT2OID, 2, true, TYPALIGN_SHORT),
	                    Array(c.max_attempts, NULL, n, INT2OID, 2, true, TYPALIGN_SHORT),
	                    Array(c.created_ats, NULL, n, TIMESTAMPTZOID, 8, true, TYPALIGN_DOUBLE),
	                    Array(c.unique_keys, c.unique_nulls, n, BYTEAOID, -1, false, TYPALIGN_INT),
	                    Array(c.unique_states, NULL, n, INT2OID, 2, true, TYPALIGN_SHORT),
	                    Array(c.payloads, c.payload_nulls, n, JSONBOID, -1, false, TYPALIGN_INT),
	                    CStringGetTextDatum(state)};
	Execute(Stmt::kInsertDeferredMany, 0, values, NULL);
	if (strcmp(state, "scheduled") != 0)
		return;  // parked: the resume moves them, not the worker
	TimestampTz earliest = DT_NOEND;
	for (int i = 0; i < n; i++)
		earliest = Min(earliest, rows[order[i]].run_at);
	WakeWorkerForDeferred(earliest);
}

}  // namespace

// Once the rows are in, this transaction holds RowExclusiveLock on the slot's
// children, which keeps prune out until it ends: the published generation is
// no longer needed.
void
AppendReadyRows(JobRow *rows, const int *order, int n, TimestampTz now)
{
	InsertLaneRows(rows, order, n, now);
	ClearEnqueueGeneration();
}

void
InsertJobs(JobRow *rows, int n, TimestampTz now, ReadyAt ready_at, Paused paused)
{
	if (n == 0)
		return;
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		rows[i].concurrency_key = ConcurrencyKeyOf(rows[i].payload);
	}
	if (int skipped = ClaimUniqueKeys(rows, n, now)) {
		// Skipped duplicates write nothing more: no lane, no lane position,
		// no row, no counter move, no wake-up. The caller reads their
		// job_id (the holder's) from `rows`; the others go on in a copy.
		JobRow *kept = static_cast<JobRow *>(palloc(sizeof(JobRow) * (n - skipped + 1)));
		int k = 0;
		for (int i = 0; i < n; i++) {
			CHECK_FOR_INTERRUPTS();
			if (!rows[i].skipped)
				kept[k++] = rows[i];
		}
		rows = kept;
		n = k;
		if (n == 0)
			return;
	}
	int *order = static_cast<int *>(palloc(sizeof(int) * (n + 1)));
	int ready = 0, deferred = 0;
	for (int i = 0; i < n; i++)
		if (rows[i].run_at <= now)
			order[ready++] = i;
	int *deferred_order = static_cast<int *>(palloc(sizeof(int) * (n + 1)));
	for (int i = 0; i < n; i++)
		if (rows[i].run_at > now)
			deferred_order[deferred++] = i;
	// The due rows of a paused queue are parked (deferred_order's tail).
	int *parked_order = deferred_order + deferred;
	int parked = 0;

	sort_rows = rows;
	qsort(order, ready, sizeof(int), CompareLanes);
	for (int start = 0; start < ready;) {
		int end = start + 1;
		while (end < ready && SameLane(rows[order[end]], rows[order[start]]))
			end++;
		// (once per run of lanes of one queue: lanes are sorted by queue first)
		bool park = paused == Paused::kParkPaused &&
		            (start > 0 && SameText(rows[order[start - 1]].queue, rows[order[start]].queue)
		                 ? parked > 0 && SameText(rows[parked_order[parked - 1]].queue, rows[order[start]].queue)
		                 : QueueMayBePaused(rows[order[start]].queue));
		if (park) {
			for (int i = start; i < end; i++) {
				CHECK_FOR_INTERRUPTS();
				parked_order[parked++] = order[i];
			}
		} else if (ready_at == ReadyAt::kCommit)
			DeferReadyRows(rows, order + start, end - start);
		else
			AppendReadyRows(rows, order + start, end - start, now);
		start = end;
	}
	if (parked > 0)
		InsertDeferred(rows, parked_order, parked, "available");
	if (deferred > 0)
		InsertDeferred(rows, deferred_order, deferred, "scheduled");
	// The lanes of scheduled and parked rows (deferred_order's two parts).
	deferred += parked;
	if (deferred > 0) {
		// A deferred job's lane exists once the job is committed: its queue
		// is known (queue_counts lists it) and promotion finds the lane
		// ready. An enqueue asks for it at commit (pending_enqueues.hpp).
		// Once per lane, not per job: each EnsureLane may look the lane up
		// with an index scan whose memory lives until the call ends (a
		// million scheduled jobs of one lane made 1M scans).
		qsort(deferred_order, deferred, sizeof(int), CompareLanes);
		for (int i = 0; i < deferred; i++) {
			CHECK_FOR_INTERRUPTS();
			const JobRow &row = rows[deferred_order[i]];
			if (i > 0) {
				const JobRow &previous = rows[deferred_order[i - 1]];
				if (SameLane(previous, row))
					continue;
			}
			if (ready_at == ReadyAt::kCommit)
				DeferLane(row);
			else
				(void)HoldLane(row.queue, row.priority, row.concurrency_key);
		}
	}
	// Counter moves, one call per run of rows with the same queue and states.
	for (int start = 0; start < n;) {
		CHECK_FOR_INTERRUPTS();
		int to = static_cast<int>(rows[start].run_at <= now ? JobState::kAvailable : JobState::kScheduled);
		int end = start + 1;
		while (end < n && rows[end].from_state == rows[start].from_state &&
		       static_cast<int>(rows[end].run_at <= now ? JobState::kAvailable : JobState::kScheduled) == to &&
		       (rows[end].queue == rows[start].queue || SameText(rows[end].queue, rows[start].queue)))
			end++;
		if (rows[start].from_state != to)
			CountMove(rows[start].queue, rows[start].from_state, to, end - start);
		start = end;
	}
}

}  // namespace awa::pg
