// attempts.cpp: finding, checking and closing running attempts (see attempts.hpp).
#include "pg/attempts.hpp"

#include "pg/key_limits.hpp"

#include "pg/core_calls.hpp"
#include "pg/batch_scan.hpp"
#include "pg/arguments.hpp"
#include "pg/counters.hpp"
#include "pg/direct_insert.hpp"
#include "pg/errors.hpp"
#include "pg/lane_locks.hpp"
#include "pg/rings.hpp"
#include "pg/queue_settings.hpp"
#include "pg/sequences.hpp"
#include "pg/wakeups.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "access/htup_details.h"
#include "utils/datum.h"
#include "access/relation.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
}

#include <cstdlib>
#include <type_traits>

namespace awa::pg {

namespace {

using core::JobState;

// Orders attempt positions by (claim batch, slot, index): the lock order.
const Attempt *sort_attempts;
int
CompareAttempts(const void *a, const void *b)
{
	const Attempt &x = sort_attempts[*static_cast<const int *>(a)];
	const Attempt &y = sort_attempts[*static_cast<const int *>(b)];
	if (x.claim_batch_id != y.claim_batch_id)
		return x.claim_batch_id < y.claim_batch_id ? -1 : 1;
	if (x.claim_slot != y.claim_slot)
		return x.claim_slot < y.claim_slot ? -1 : 1;
	if (x.index != y.index)
		return x.index < y.index ? -1 : 1;
	// Same attempt twice in one call: the earlier one wins.
	int a_position = *static_cast<const int *>(a), b_position = *static_cast<const int *>(b);
	return a_position < b_position ? -1 : (a_position > b_position ? 1 : 0);
}

template <typename T>
T *
Elements(Datum array, Oid type, int length, bool byval, char align, int *count)
{
	Datum *values;
	bool *nulls;
	deconstruct_array(DatumGetArrayTypeP(array), type, length, byval, align, &values, &nulls, count);
	T *out = static_cast<T *>(palloc(sizeof(T) * (*count + 1)));
	for (int i = 0; i < *count; i++)
		out[i] = type == INT8OID ? static_cast<T>(DatumGetInt64(values[i]))
		                         : (type == INT2OID ? static_cast<T>(DatumGetInt16(values[i]))
		                                            : static_cast<T>(DatumGetInt32(values[i])));
	return out;
}

// The closures maintenance makes: a dead worker's attempt, an expired one.
bool
IsRescueOutcome(const char *outcome)
{
	return strcmp(outcome, "rescued") == 0 || strcmp(outcome, "deadline_expired") == 0;
}

JobState
StateOfOutcome(const char *outcome)
{
	core::JobState state = JobState::kCompleted;
	// A rescued attempt (dead worker, expired deadline) leaves its job retryable.
	if (IsRescueOutcome(outcome))
		return JobState::kRetryable;
	if (!core::ParseJobState(outcome, strlen(outcome), &state))
		elog(ERROR, "awa: unknown closure outcome \"%s\"", outcome);
	return state;
}

// True when the plain table has any block at all. A table with no block has
// no row, visible or not, so the delete that would find nothing is skipped:
// jobs that never heartbeat and queues without unique jobs pay nothing.
bool
TableHasBlocks(AwaObject table)
{
	Oid relid = AwaObjectOid(table);
	if (!OidIsValid(relid))
		return false;
	Relation relation = relation_open(relid, AccessShareLock);
	BlockNumber blocks = RelationGetNumberOfBlocks(relation);
	relation_close(relation, NoLock);
	return blocks > 0;
}

// The column numbers of a closure child that a completion reads.
struct ClosureColumns {
	AttrNumber batch_id;
	AttrNumber closed_count;
	AttrNumber outcome;
};

ClosureColumns
ClosureColumnsOf(int slot)
{
	static Oid incarnation = InvalidOid;
	static ClosureColumns columns[core::kMaxRingSlots];
	if (incarnation != ExtensionIncarnation()) {
		memset(columns, 0, sizeof(columns));
		incarnation = ExtensionIncarnation();
	}
	ClosureColumns &c = columns[slot];
	if (c.batch_id == InvalidAttrNumber) {
		c.closed_count = BatchColumn(RingTable::kClosureBatches, slot, "closed_count");
		c.outcome = BatchColumn(RingTable::kClosureBatches, slot, "outcome");
		c.batch_id = BatchColumn(RingTable::kClosureBatches, slot, "batch_id");
	}
	return c;
}

// A run of consecutive claim positions [first, last] and, per position, the
// outcome of the closure that covers it (NULL: open).
struct RunClosures {
	int32 first;
	int32 last;
	const char **run_closed;
	ClosureColumns columns;
};
static_assert(std::is_trivially_destructible_v<RunClosures>, "lives across PostgreSQL errors");

bool
VisitRunClosure(const BatchRow &row, void *arg)
{
	RunClosures &run = *static_cast<RunClosures *>(arg);
	bool isnull;
	int32 start = core::ClosureFirstIndex(DatumGetInt64(heap_getattr(row.tuple, run.columns.batch_id, row.desc, &isnull)));
	// (closed_count and outcome are stored only when they differ from the
	// column's missing value, 1 and 'completed': heap_getattr reads it)
	int32 closed_count = DatumGetInt32(heap_getattr(row.tuple, run.columns.closed_count, row.desc, &isnull));
	char *row_outcome = TextDatumGetCString(heap_getattr(row.tuple, run.columns.outcome, row.desc, &isnull));
	int32 upto = Min(run.last, start + closed_count - 1);
	for (int32 position = Max(run.first, start); position <= upto; position++) {
		CHECK_FOR_INTERRUPTS();
		run.run_closed[position - run.first] = row_outcome;
	}
	return true;
}

struct Closed {
	Datum *job_ids;
	Datum *run_leases;
	int count;
};

// The columns of a claim batch that a completion reads: by value, the
// varlena ones copied as they are stored (an out-of-line array stays a TOAST
// pointer: ReadClaimArrays keys its copy by it).
struct ClaimBatchRow {
	int16 ready_slot;
	int64 ready_generation;
	Datum queue;
	int16 priority;
	int32 claimed_count;
	// lane_seqs and job_ids (Datum) 0 when NULL
	Datum job_ids, run_leases, lane_seqs, attempts, max_attempts;
	int64 first_lane_seq;
	int64 first_job_id;
	// The row version read: with the batch id, what a backend's copy of
	// the arrays is keyed by (ReadClaimArrays).
	ItemPointerData tid;
	TransactionId xmin;
	TimestampTz claimed_at;
	TimestampTz deadline_at;
	int64 claim_generation;
	int64 lane_id;
	bool found;
};
static_assert(std::is_trivially_destructible_v<ClaimBatchRow>, "lives across PostgreSQL errors");

// The column numbers of a claim child, by name, per slot and incarnation.
enum ClaimColumn {
	kReadySlot, kReadyGeneration, kQueue, kPriority, kClaimedCount, kJobIds, kRunLeases, kLaneSeqs, kAttemptsColumn,
	kMaxAttemptsColumn, kClaimedAt, kDeadlineAt, kClaimGeneration, kLaneId, kFirstJobId, kFirstLaneSeq, kClaimColumns
};
const char *const kClaimColumnNames[kClaimColumns] = {
    "ready_slot", "ready_generation", "queue",       "priority",   "claimed_count",    "job_ids", "run_leases",
    "lane_seqs",  "attempts",         "max_attempts", "claimed_at", "deadline_at", "claim_generation", "lane_id",
    "first_job_id", "first_lane_seq"};

const AttrNumber *
ClaimColumnsOf(int slot)
{
	static Oid incarnation = InvalidOid;
	static AttrNumber columns[core::kMaxRingSlots][kClaimColumns];
	if (incarnation != ExtensionIncarnation()) {
		memset(columns, 0, sizeof(columns));
		incarnation = ExtensionIncarnation();
	}
	AttrNumber *c = columns[slot];
	if (c[kFirstLaneSeq] == InvalidAttrNumber) {
		AttrNumber found[kClaimColumns];
		for (int i = 0; i < kClaimColumns; i++)
			found[i] = BatchColumn(RingTable::kClaimBatches, slot, kClaimColumnNames[i]);
		memcpy(c, found, sizeof(found));  // (whole or not at all: an error leaves it unset)
	}
	return c;
}

struct ClaimBatchRead {
	const AttrNumber *columns;
	ClaimBatchRow *row;
};
static_assert(std::is_trivially_destructible_v<ClaimBatchRead>, "lives across PostgreSQL errors");

bool
VisitClaimBatch(const BatchRow &batch, void *arg)
{
	ClaimBatchRead &read = *static_cast<ClaimBatchRead *>(arg);
	const AttrNumber *c = read.columns;
	ClaimBatchRow &row = *read.row;
	bool isnull;
	auto value = [&](ClaimColumn column) { return heap_getattr(batch.tuple, c[column], batch.desc, &isnull); };
	auto varlena = [&](ClaimColumn column) { return datumCopy(value(column), false, -1); };
	row.ready_slot = DatumGetInt16(value(kReadySlot));
	row.ready_generation = DatumGetInt64(value(kReadyGeneration));
	row.queue = varlena(kQueue);
	row.priority = DatumGetInt16(value(kPriority));
	row.claimed_count = DatumGetInt32(value(kClaimedCount));
	// NULL: the ids are first_job_id, first_job_id + 1, ... (05_claim_ring.sql).
	Datum job_ids = value(kJobIds);
	row.job_ids = isnull ? (Datum)0 : datumCopy(job_ids, false, -1);
	row.first_job_id = DatumGetInt64(value(kFirstJobId));
	row.tid = batch.tuple->t_self;
	row.xmin = HeapTupleHeaderGetRawXmin(batch.tuple->t_data);
	row.run_leases = varlena(kRunLeases);
	// NULL: the positions are first_lane_seq, first_lane_seq + 1, ... (05_claim_ring.sql).
	Datum lane_seqs = value(kLaneSeqs);
	row.lane_seqs = isnull ? (Datum)0 : datumCopy(lane_seqs, false, -1);
	row.first_lane_seq = DatumGetInt64(value(kFirstLaneSeq));
	row.attempts = varlena(kAttemptsColumn);
	row.max_attempts = varlena(kMaxAttemptsColumn);
	row.claimed_at = DatumGetTimestampTz(value(kClaimedAt));
	row.deadline_at = DatumGetTimestampTz(value(kDeadlineAt));
	row.claim_generation = DatumGetInt64(value(kClaimGeneration));
	row.lane_id = DatumGetInt64(value(kLaneId));
	row.found = true;
	return true;
}

// Reads the claim batch `claim_batch_id` that a receipt names in claim slot
// `receipt_slot` into *row; *slot is where it is. One probe of each claim
// child's unique batch_id index (batch_scan.hpp; through SPI the read cost
// some 49,000 instructions per completion, most of it the executor's start).
// The batch is in the slot its claim_generation maps to, or, if a prune
// carried it forward while it was open (docs/maintenance.md §3.5), in a later
// slot with that claim_generation kept: either way a receipt is accepted only
// with the slot it was issued with. False when no slot holds it (truncated with its slot,
// or never existed: every attempt is stale).
bool
ReadClaimBatch(int64 claim_batch_id, int receipt_slot, int slot_count, int *slot, ClaimBatchRow *row)
{
	// Each child is locked before it is read, so the read's fresh snapshot is
	// taken after any prune of that slot has committed. A prune that carried
	// the batch from a slot not read yet into one already read is missed by
	// the first pass; the second pass runs while this transaction holds every
	// claim child, when no prune can move anything: it is the answer.
	for (int pass = 0; pass < 2; pass++) {
		for (int probe = 0; probe < slot_count; probe++) {
			int candidate = core::SlotOf(receipt_slot + probe, slot_count);
			LockRelationOid(RingChildOid(RingTable::kClaimBatches, candidate), AccessShareLock);
			row->found = false;
			ClaimBatchRead read{ClaimColumnsOf(candidate), row};
			(void)ScanBatchIds(RingTable::kClaimBatches, candidate, claim_batch_id, claim_batch_id, false, 1,
			                   VisitClaimBatch, &read);
			if (!row->found)
				continue;
			if (core::SlotOf(row->claim_generation, slot_count) != receipt_slot)
				return false;  // the batch exists, but this receipt was never issued for it
			*slot = candidate;
			return true;
		}
	}
	return false;
}

// Where the ready row of an open attempt is now, as (*ready_slot,
// *ready_generation) on return, holding AccessShareLock on that slot's ready
// child so that no prune can carry it away before this transaction ends. The
// claim names the slot and generation the row had when it was claimed; a
// queue prune that found the attempt still open carried the row forward into
// a later generation (same lane, lane_seq and job). The current
// generation is never a prune target; any other may be (a kept slot's
// generation is older than the last slot_count), so the row is looked for in
// its slot (one probe of its unique lane-position index) and, if it was carried, by `job_id` in
// every slot (each locked before it is read), and the check repeats under the
// new slot's lock. False when the row is nowhere (the attempt cannot be open
// then).
bool
LocateReadyRow(int64 lane_id, int64 lane_seq, int64 job_id, int64 row_run_lease, int16 *ready_slot,
               int64 *ready_generation)
{
	for (int round = 0; round < 100; round++) {
		LockRelationOid(RingChildOid(RingTable::kReadyEntries, *ready_slot), AccessShareLock);
		int64 epoch;
		RingPositions ring = CurrentRings(&epoch);
		if (*ready_generation == ring.queue_generation)
			return true;
		Datum at[3] = {Int64GetDatum(lane_id), Int64GetDatum(lane_seq), Int64GetDatum(*ready_generation)};
		ExecuteLatest(Stmt::kReadyRowAt, *ready_slot, at, NULL, 1);
		if (SPI_processed == 1)
			return true;
		// Carried: look in every slot, each locked before it is read (so the
		// read's snapshot follows any prune of it); a second pass, with every
		// ready child held and no prune able to move the row, is the answer.
		bool found = false;
		Datum of_job[4] = {Int64GetDatum(job_id), Int64GetDatum(row_run_lease), Int64GetDatum(lane_id),
		                   Int64GetDatum(lane_seq)};
		for (int pass = 0; pass < 2 && !found; pass++) {
			for (int slot = 0; slot < ring.queue_slot_count && !found; slot++) {
				LockRelationOid(RingChildOid(RingTable::kReadyEntries, slot), AccessShareLock);
				ExecuteLatest(Stmt::kReadyRowOfJob, slot, of_job, NULL, 1);
				if (SPI_processed == 1) {
					bool isnull;
					*ready_slot = static_cast<int16>(slot);
					*ready_generation =
					    DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
					found = true;
				}
			}
		}
		if (!found)
			return false;
		// Lock the new slot and look again: it may have moved once more.
	}
	elog(ERROR, "awa: the ready row of job " INT64_FORMAT " keeps moving", job_id);
	return false;
}

// The per-position arrays of a claim batch (job_ids .. max_attempts).
struct ClaimArrays {
	int64 claim_batch_id;
	// With the batch id, what the backend's copy is keyed by (below): the
	// extension's incarnation and the row version the arrays were read from.
	Oid incarnation;
	ItemPointerData tid;
	TransactionId xmin;
	int count;
	const int64 *job_ids;
	const int64 *run_leases;
	const int64 *lane_seqs;
	const int16 *attempts;
	const int16 *max_attempts;
};
static_assert(std::is_trivially_destructible_v<ClaimArrays>, "lives across PostgreSQL errors");

// The backend's copy of the arrays of the last big claim batch it read, so
// that a worker (or the rescue) ending a big claim's attempts one call each
// does not detoast and unpack all its arrays (hundreds of KB at 10,000 jobs)
// in every call. A claim batch row is never updated, its batch id is never
// issued again (a global sequence, fenced after a crash), and a carried copy
// holds the same arrays; the copy is also keyed by the extension's
// incarnation and the row version (its tid and xmin), which a re-created
// extension or a truncated slot does not give back. (It was keyed by the
// toast value of job_ids until a batch of consecutive ids stored no job_ids,
// and its other arrays, compressed in the row, had no toast value.) Every
// call still reads the row (ReadClaimBatch) under the claim batch's lock: the
// copy is only used for a batch that exists. kCopyArraysFrom: small batches'
// arrays cost little to unpack.
constexpr int kCopyArraysFrom = 256;
MemoryContext claim_arrays_context = NULL;
ClaimArrays claim_arrays_copy;  // valid when claim_batch_id != 0

template <typename T>
const T *
CopyInto(MemoryContext context, const T *values, int count)
{
	T *copy = static_cast<T *>(MemoryContextAlloc(context, sizeof(T) * (count + 1)));
	memcpy(copy, values, sizeof(T) * count);
	return copy;
}

// A claim batch's job ids or lane positions: the stored array, or when the
// row stores none ((Datum)0) first, first + 1, ... (core/lane_positions.hpp).
const int64 *
StoredOrFromFirst(Datum stored, int64 first, int count, int *count_out)
{
	if (stored != (Datum)0)
		return Elements<int64>(stored, INT8OID, 8, true, TYPALIGN_DOUBLE, count_out);
	int64 *values = static_cast<int64 *>(palloc(sizeof(int64) * (count + 1)));
	for (int i = 0; i < count; i++)
		values[i] = core::ValueFromFirst(first, i);
	*count_out = count;
	return values;
}

ClaimArrays
ReadClaimArrays(int64 claim_batch_id, int claimed_count, const ClaimBatchRow &row)
{
	ClaimArrays arrays;
	memset(&arrays, 0, sizeof(arrays));
	arrays.incarnation = ExtensionIncarnation();
	arrays.tid = row.tid;
	arrays.xmin = row.xmin;
	bool copyable = claimed_count >= kCopyArraysFrom;
	if (copyable && claim_arrays_copy.claim_batch_id == claim_batch_id && claim_arrays_copy.count == claimed_count &&
	    claim_arrays_copy.incarnation == arrays.incarnation && ItemPointerEquals(&claim_arrays_copy.tid, &arrays.tid) &&
	    TransactionIdEquals(claim_arrays_copy.xmin, arrays.xmin))
		return claim_arrays_copy;
	int counts[5];
	arrays.claim_batch_id = claim_batch_id;
	arrays.count = claimed_count;
	arrays.job_ids = StoredOrFromFirst(row.job_ids, row.first_job_id, claimed_count, &counts[0]);
	arrays.run_leases = Elements<int64>(row.run_leases, INT8OID, 8, true, TYPALIGN_DOUBLE, &counts[1]);
	arrays.lane_seqs = StoredOrFromFirst(row.lane_seqs, row.first_lane_seq, claimed_count, &counts[2]);
	arrays.attempts = Elements<int16>(row.attempts, INT2OID, 2, true, TYPALIGN_SHORT, &counts[3]);
	arrays.max_attempts = Elements<int16>(row.max_attempts, INT2OID, 2, true, TYPALIGN_SHORT, &counts[4]);
	for (int count : counts)
		copyable = copyable && count == claimed_count;
	if (!copyable)
		return arrays;
	// Invalid until complete: an error while copying leaves no half copy.
	claim_arrays_copy.claim_batch_id = 0;
	if (claim_arrays_context == NULL)
		claim_arrays_context = AllocSetContextCreate(TopMemoryContext, "awa claim batch arrays", ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(claim_arrays_context);
	ClaimArrays copy = arrays;
	copy.job_ids = CopyInto(claim_arrays_context, arrays.job_ids, claimed_count);
	copy.run_leases = CopyInto(claim_arrays_context, arrays.run_leases, claimed_count);
	copy.lane_seqs = CopyInto(claim_arrays_context, arrays.lane_seqs, claimed_count);
	copy.attempts = CopyInto(claim_arrays_context, arrays.attempts, claimed_count);
	copy.max_attempts = CopyInto(claim_arrays_context, arrays.max_attempts, claimed_count);
	claim_arrays_copy = copy;
	return arrays;
}

// Resolves (and acts on) the attempts at positions order[0..n) of one claim batch.
void
ProcessClaimBatch(Attempt *attempts, const int *order, int n, AttemptAction action, const char *outcome,
                  int claim_slot_count, MemoryContext result_context, Closed *closed_out)
{
	const Attempt &head = attempts[order[0]];
	int slot = head.claim_slot;
	int64 claim_batch_id = head.claim_batch_id;
	LockClaimBatch(claim_batch_id);

	ClaimBatchRow row;
	if (!ReadClaimBatch(claim_batch_id, head.claim_slot, claim_slot_count, &slot, &row)) {
		// Truncated with its ring slot, or never existed: all stale, and the
		// lock guards nothing. Given back at once, so receipts of no batch
		// (a worker's made-up ones: every id of a long call a batch of its
		// own) do not fill the shared lock table until the transaction ends
		// (test/sql/complete.sql counts the locks).
		UnlockClaimBatch(claim_batch_id);
		return;
	}
	int16 ready_slot = row.ready_slot;
	int64 ready_generation = row.ready_generation;
	Datum queue = row.queue;
	int16 priority = row.priority;
	int claimed_count = row.claimed_count;
	ClaimArrays arrays = ReadClaimArrays(claim_batch_id, claimed_count, row);
	const int64 *job_ids = arrays.job_ids;
	const int64 *run_leases = arrays.run_leases;
	const int64 *lane_seqs = arrays.lane_seqs;
	const int16 *attempt_numbers = arrays.attempts;
	const int16 *max_attempts = arrays.max_attempts;
	TimestampTz claimed_at = row.claimed_at;
	TimestampTz deadline_at = row.deadline_at;
	int64 lane_id = row.lane_id;
	Datum result_queue;
	{
		MemoryContext previous = MemoryContextSwitchTo(result_context);
		result_queue = PointerGetDatum(DatumGetTextPCopy(queue));
		MemoryContextSwitchTo(previous);
	}

	// Which of this call's attempts are closed, and by what outcome (NULL:
	// open), read for the attempts that match their claim's arrays (the
	// others are stale): their distinct positions, in order, form runs of
	// consecutive positions, and each run is two probes of the closure
	// child's batch_id index (at most its length + 1 closure rows). So the call reads O(its attempts) closures,
	// not every closure the batch already has (docs/architecture.md,
	// "Closures keyed under their claim batch").
	bool *matches = static_cast<bool *>(palloc(sizeof(bool) * (n + 1)));
	const char **closed_by = static_cast<const char **>(palloc0(sizeof(char *) * (n + 1)));
	const char **run_closed = static_cast<const char **>(palloc(sizeof(char *) * (n + 1)));
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		const Attempt &attempt = attempts[order[i]];
		int index = attempt.index;
		matches[i] =
		    index < claimed_count && job_ids[index] == attempt.job_id && run_leases[index] == attempt.run_lease;
	}
	for (int i = 0; i < n;) {
		CHECK_FOR_INTERRUPTS();
		if (!matches[i]) {
			i++;
			continue;
		}
		int first = attempts[order[i]].index;
		int last = first;
		int end = i + 1;
		while (end < n) {
			CHECK_FOR_INTERRUPTS();
			if (matches[end]) {
				if (attempts[order[end]].index > last + 1)
					break;
				last = attempts[order[end]].index;
			}
			end++;
		}
		// last - first + 1 <= the matching attempts of the run <= n.
		memset(run_closed, 0, sizeof(char *) * (last - first + 1));
		// The closures that can cover the run [first, last] (consecutive
		// positions): the last one keyed at or below first (it covers the
		// run when it reaches that far) and those keyed in (first, last].
		// Closures are runs keyed by their first position
		// (core::ClosureBatchId), so no other can. Two probes of the closure
		// child's batch_id index (batch_scan.hpp), at most last - first + 2
		// rows, whatever the number of the batch's closures.
		RunClosures run{first, last, run_closed, ClosureColumnsOf(slot)};
		int64 first_id = core::ClosureBatchId(claim_batch_id, first);
		(void)ScanBatchIds(RingTable::kClosureBatches, slot, core::FirstClosureBatchId(claim_batch_id), first_id,
		                   true, 1, VisitRunClosure, &run);
		if (last > first)
			(void)ScanBatchIds(RingTable::kClosureBatches, slot, first_id + 1,
			                   core::ClosureBatchId(claim_batch_id, last), false, PG_INT64_MAX, VisitRunClosure, &run);
		for (int k = i; k < end; k++) {
			CHECK_FOR_INTERRUPTS();
			if (matches[k])
				closed_by[k] = run_closed[attempts[order[k]].index - first];
		}
		i = end;
	}

	// The open attempts of a batch were claimed from one slot and are carried
	// together: where the first one's ready row is now, all of theirs are.
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();  // every loop over a call's jobs can be cancelled
		const Attempt &attempt = attempts[order[i]];
		if (!matches[i] || closed_by[i] != NULL)
			continue;
		if (!LocateReadyRow(lane_id, lane_seqs[attempt.index], attempt.job_id, attempt.run_lease - 1, &ready_slot,
		                    &ready_generation))
			ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
			                errmsg("awa: the ready row of open attempt (%lld, %lld) is missing",
			                       static_cast<long long>(attempt.job_id), static_cast<long long>(attempt.run_lease))));
		break;
	}

	Datum *closed_indexes = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *closed_jobs = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *closed_leases = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *closed_lanes = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	int accepted = 0;
	const char *close_as = action == AttemptAction::kComplete ? "completed" : outcome;
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		Attempt &attempt = attempts[order[i]];
		int index = attempt.index;
		if (!matches[i])
			continue;  // stale
		attempt.ready_slot = ready_slot;
		attempt.ready_generation = ready_generation;
		attempt.queue = result_queue;
		attempt.priority = priority;
		attempt.lane_id = lane_id;
		attempt.lane_seq = lane_seqs[index];
		attempt.attempt = attempt_numbers[index];
		attempt.max_attempts = max_attempts[index];
		attempt.claimed_at = claimed_at;
		attempt.deadline_at = deadline_at;
		// Closed by this call: a duplicate later in the same call (the
		// attempts are in index order) sees it closed.
		if (closed_by[i] == NULL && accepted > 0 && DatumGetInt32(closed_indexes[accepted - 1]) == index)
			closed_by[i] = close_as;
		if (closed_by[i] != NULL) {
			attempt.status = AttemptStatus::kClosed;
			strlcpy(attempt.closed_outcome, closed_by[i], sizeof(attempt.closed_outcome));
			continue;
		}
		attempt.status = AttemptStatus::kOpen;
		if (action == AttemptAction::kInspect)
			continue;
		attempt.closed_now = true;
		closed_indexes[accepted] = Int32GetDatum(index);
		closed_jobs[accepted] = Int64GetDatum(attempt.job_id);
		closed_leases[accepted] = Int64GetDatum(attempt.run_lease);
		closed_lanes[accepted] = Int64GetDatum(lane_seqs[index]);
		accepted++;
	}
	if (accepted == 0)
		return;

	// One closure row per run of consecutive positions closed (ascending and
	// distinct here), keyed by its first position (core/receipt.hpp), and for
	// a completion one completion batch with the same id. The claim batch's
	// lock, held to this transaction's end, and the fresh reads of its
	// closures above make the positions, and so the keys, this transaction's
	// alone (docs/architecture.md, "Closures keyed under their claim batch").
	TimestampTz now = GetCurrentTimestamp();
	for (int run_start = 0; run_start < accepted;) {
		CHECK_FOR_INTERRUPTS();
		int run_end = run_start + 1;
		while (run_end < accepted &&
		       DatumGetInt32(closed_indexes[run_end]) == DatumGetInt32(closed_indexes[run_end - 1]) + 1) {
			CHECK_FOR_INTERRUPTS();
			run_end++;
		}
		int run_length = run_end - run_start;
		int64 batch_id = core::ClosureBatchId(claim_batch_id, DatumGetInt32(closed_indexes[run_start]));
		// Column order of awa.lease_claim_closure_batches (05_claim_ring.sql, then
		// 12_ring_partitions.sql). The
		// closed jobs and run leases are the claim batch's at claim_indexes.
		// (The claim batch is batch_id's high bits: no column holds it.)
		Datum closure[8] = {Int16GetDatum(slot),
		                    Int16GetDatum(ready_slot),
		                    Int64GetDatum(batch_id),
		                    Int64GetDatum(ready_generation),
		                    TimestampTzGetDatum(now),
		                    CStringGetTextDatum(close_as),
		                    Int32GetDatum(run_length),
		                    PointerGetDatum(construct_array(closed_indexes + run_start, run_length, INT4OID, 4, true,
		                                                    TYPALIGN_INT))};
		bool closure_nulls[8] = {false};
		InsertRingRow(RingTable::kClosureBatches, slot, closure, closure_nulls, 8);
		if (action == AttemptAction::kComplete) {
			// Column order of awa.receipt_completion_batches (04_queue_ring.sql, then
			// 12_ring_partitions.sql). No job ids: the jobs are the slot's
			// ready rows at their lane positions, stored as lane_seqs only
			// when they are not first, first + 1, ...
			bool consecutive = core::FollowFirst(
			    run_length, [&closed_lanes, run_start](int32 i) { return DatumGetInt64(closed_lanes[run_start + i]); });
			Datum completion[12] = {
			    Int16GetDatum(ready_slot),
			    Int16GetDatum(slot),
			    Int16GetDatum(priority),
			    Int64GetDatum(ready_generation),
			    Int64GetDatum(batch_id),
			    Int64GetDatum(lane_id),
			    closed_lanes[run_start],
			    queue,
			    TimestampTzGetDatum(now),
			    Int32GetDatum(run_length),
			    PointerGetDatum(construct_array(closed_leases + run_start, run_length, INT8OID, 8, true, TYPALIGN_DOUBLE)),
			    consecutive ? (Datum)0
			                : PointerGetDatum(construct_array(closed_lanes + run_start, run_length, INT8OID, 8, true,
			                                                  TYPALIGN_DOUBLE))};
			bool completion_nulls[12] = {false};
			completion_nulls[11] = consecutive;
			InsertRingRow(RingTable::kCompletionBatches, ready_slot, completion, completion_nulls, 12);
		}
		run_start = run_end;
	}
	CountMove(DatumGetTextPP(queue), static_cast<int>(JobState::kRunning), static_cast<int>(StateOfOutcome(close_as)),
	          accepted, IsRescueOutcome(close_as) ? core::JobEvent::kRescued : core::JobEvent::kNone);
	// Slots of a queue with a concurrency limit free at this commit: the
	// claims waiting at the limit look again then (running_limits.hpp); the
	// key's, when the queue has limits per key (key_limits.hpp, which wakes
	// them too).
	const QueueSettings settings = SettingsOf(DatumGetTextPP(queue));
	if (settings.max_running > 0)
		WakeQueueAtCommit(DatumGetTextPP(queue));
	CountKeyedAttemptsEnded(DatumGetTextPP(queue), settings, lane_id, accepted);
	for (int i = 0; i < accepted; i++) {
		closed_out->job_ids[closed_out->count] = closed_jobs[i];
		closed_out->run_leases[closed_out->count] = closed_leases[i];
		closed_out->count++;
	}
	// The next claim batch of this call reads with a fresh command id.
	CommandCounterIncrement();
}

}  // namespace

void
ProcessAttempts(Attempt *attempts, int n, AttemptAction action, const char *outcome, MemoryContext result_context)
{
	int64 epoch;
	RingPositions ring = CurrentRings(&epoch);
	int *order = static_cast<int *>(palloc(sizeof(int) * (n + 1)));
	int decoded = 0;
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		Attempt &attempt = attempts[i];
		attempt.status = AttemptStatus::kStale;
		attempt.closed_outcome[0] = '\0';
		attempt.closed_now = false;
		std::optional<core::Receipt> receipt = core::DecodeReceipt(attempt.receipt_id, ring.claim_slot_count);
		if (!receipt.has_value())
			continue;
		attempt.claim_batch_id = receipt->claim_batch_id;
		attempt.index = receipt->index;
		attempt.claim_slot = receipt->claim_slot;
		order[decoded++] = i;
	}
	sort_attempts = attempts;
	qsort(order, decoded, sizeof(int), CompareAttempts);

	Closed closed;
	closed.job_ids = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
	closed.run_leases = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
	closed.count = 0;
	for (int start = 0; start < decoded;) {
		CHECK_FOR_INTERRUPTS();
		int end = start + 1;
		while (end < decoded && attempts[order[end]].claim_batch_id == attempts[order[start]].claim_batch_id &&
		       attempts[order[end]].claim_slot == attempts[order[start]].claim_slot)
			end++;
		ProcessClaimBatch(attempts, order + start, end - start, action, outcome, ring.claim_slot_count, result_context,
		                  &closed);
		start = end;
	}
	if (closed.count == 0)
		return;

	// A closed attempt keeps no heartbeat row; a job leaving the states its
	// unique key covers frees the key.
	Datum jobs = PointerGetDatum(construct_array(closed.job_ids, closed.count, INT8OID, 8, true, TYPALIGN_DOUBLE));
	Datum leases = PointerGetDatum(construct_array(closed.run_leases, closed.count, INT8OID, 8, true, TYPALIGN_DOUBLE));
	if (TableHasBlocks(AwaObject::kAttemptState)) {
		Datum values[2] = {jobs, leases};
		Execute(Stmt::kDeleteAttemptState, 0, values, NULL);
	}
	JobState target = StateOfOutcome(action == AttemptAction::kComplete ? "completed" : outcome);
	if (!core::MaskHolds(core::kRequiredUniqueMask, target) && TableHasBlocks(AwaObject::kJobUniqueClaims)) {
		Datum values[2] = {jobs, Int16GetDatum(core::MaskOf(target))};
		Execute(Stmt::kReleaseUnique, 0, values, NULL);
	}
}

Attempt
AttemptArgument(FunctionCallInfo fcinfo, int first_arg)
{
	RequireArgument(fcinfo, first_arg, "job_id", false);
	RequireArgument(fcinfo, first_arg + 1, "run_lease", false);
	RequireArgument(fcinfo, first_arg + 2, "receipt_id", false);
	Attempt attempt;
	memset(&attempt, 0, sizeof(attempt));
	attempt.job_id = PG_GETARG_INT64(first_arg);
	attempt.run_lease = PG_GETARG_INT64(first_arg + 1);
	attempt.receipt_id = PG_GETARG_INT64(first_arg + 2);
	return attempt;
}

int
AttemptArrays(FunctionCallInfo fcinfo, int first_arg, Attempt **out)
{
	core::Violation violation;
	RequireArgument(fcinfo, first_arg, "job_ids", false);
	RequireArgument(fcinfo, first_arg + 1, "run_leases", false);
	RequireArgument(fcinfo, first_arg + 2, "receipt_ids", false);
	Datum *jobs, *leases, *receipts;
	bool *job_nulls, *lease_nulls, *receipt_nulls;
	int n = ArrayElements(PG_GETARG_ARRAYTYPE_P(first_arg), INT8OID, "job_ids", &jobs, &job_nulls);
	int lease_count = ArrayElements(PG_GETARG_ARRAYTYPE_P(first_arg + 1), INT8OID, "run_leases", &leases, &lease_nulls);
	int receipt_count =
	    ArrayElements(PG_GETARG_ARRAYTYPE_P(first_arg + 2), INT8OID, "receipt_ids", &receipts, &receipt_nulls);
	Require(core::CheckSameLength("run_leases", lease_count, "job_ids", n, &violation), violation);
	Require(core::CheckSameLength("receipt_ids", receipt_count, "job_ids", n, &violation), violation);
	Attempt *attempts = static_cast<Attempt *>(palloc0(sizeof(Attempt) * (n + 1)));
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		if (job_nulls[i] || lease_nulls[i] || receipt_nulls[i])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("attempt %d has a NULL element", i + 1),
			                errhint("Pass job_id, run_lease and receipt_id as returned by awa.claim.")));
		attempts[i].job_id = DatumGetInt64(jobs[i]);
		attempts[i].run_lease = DatumGetInt64(leases[i]);
		attempts[i].receipt_id = DatumGetInt64(receipts[i]);
	}
	*out = attempts;
	return n;
}

}  // namespace awa::pg
