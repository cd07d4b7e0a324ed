// fn_complete.cpp: awa.complete and awa.complete_many.
//
// An attempt is live while its claim evidence exists and no closure evidence
// covers it. Completion groups the attempts by claim batch (one batch = one
// lane and one ready slot), locks each batch (serializing concurrent closes of
// the same attempts), checks every attempt against the claim row found from
// its receipt id and against the batch's closures (read with a fresh snapshot,
// so a close committed while we waited for the lock is seen), then appends one
// closure batch (claim ring) and one completion batch (queue ring, the
// terminal history). Nothing is updated or deleted. An attempt that is not the
// live one (wrong job, run lease or receipt, or already closed) is refused and
// changes nothing.
#include "core/receipt.hpp"
#include "core/validate.hpp"
#include "pg/arguments.hpp"
#include "pg/direct_insert.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/lane_locks.hpp"
#include "pg/rings.hpp"
#include "pg/sequences.hpp"
#include "pg/spi_plans.hpp"

#include <cstdlib>

namespace awa::pg {

namespace {

struct Attempt {
	int64 job_id;
	int64 run_lease;
	int64 receipt_id;
	bool decoded;
	int64 claim_batch_id;
	int32 index;
	int32 claim_slot;
	bool accepted;
};

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
	// Same attempt twice in one call: the earlier one is accepted.
	int a_position = *static_cast<const int *>(a), b_position = *static_cast<const int *>(b);
	return a_position < b_position ? -1 : (a_position > b_position ? 1 : 0);
}

int64 *
Int64Elements(Datum array, int *count)
{
	Datum *values;
	bool *nulls;
	deconstruct_array(DatumGetArrayTypeP(array), INT8OID, 8, true, TYPALIGN_DOUBLE, &values, &nulls, count);
	int64 *out = static_cast<int64 *>(palloc(sizeof(int64) * (*count + 1)));
	for (int i = 0; i < *count; i++)
		out[i] = DatumGetInt64(values[i]);
	return out;
}

// Closes the attempts at positions order[0..n) of one claim batch.
void
CompleteClaimBatch(Attempt *attempts, const int *order, int n, Oid closure_seq)
{
	const Attempt &head = attempts[order[0]];
	int slot = head.claim_slot;
	int64 claim_batch_id = head.claim_batch_id;
	LockClaimBatch(claim_batch_id);

	Datum key[1] = {Int64GetDatum(claim_batch_id)};
	ExecuteLatest(Stmt::kClaimBatch, slot, key, NULL, 1);
	if (SPI_processed == 0)
		return;  // truncated with its ring slot, or never existed
	HeapTuple tuple = SPI_tuptable->vals[0];
	TupleDesc desc = SPI_tuptable->tupdesc;
	bool isnull;
	int16 ready_slot = DatumGetInt16(SPI_getbinval(tuple, desc, 1, &isnull));
	int64 ready_generation = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
	Datum queue = SPI_getbinval(tuple, desc, 3, &isnull);
	int16 priority = DatumGetInt16(SPI_getbinval(tuple, desc, 4, &isnull));
	int claimed_count = DatumGetInt32(SPI_getbinval(tuple, desc, 5, &isnull));
	int count;
	int64 *job_ids = Int64Elements(SPI_getbinval(tuple, desc, 6, &isnull), &count);
	int64 *run_leases = Int64Elements(SPI_getbinval(tuple, desc, 7, &isnull), &count);
	int64 *lane_seqs = Int64Elements(SPI_getbinval(tuple, desc, 8, &isnull), &count);

	bool *closed = static_cast<bool *>(palloc0(sizeof(bool) * (claimed_count + 1)));
	Datum closed_key[2] = {Int64GetDatum(claim_batch_id), Int64GetDatum(PG_INT64_MAX)};
	ExecuteLatest(Stmt::kClosedIndexes, slot, closed_key, NULL);
	for (uint64 row = 0; row < SPI_processed; row++) {
		Datum *indexes;
		bool *index_nulls;
		int index_count;
		deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1, &isnull)),
		                  INT4OID, 4, true, TYPALIGN_INT, &indexes, &index_nulls, &index_count);
		for (int i = 0; i < index_count; i++) {
			int32 index = DatumGetInt32(indexes[i]);
			if (index >= 0 && index < claimed_count)
				closed[index] = true;
		}
	}

	Datum *closed_indexes = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *closed_jobs = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *closed_leases = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *closed_lanes = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	int accepted = 0;
	for (int i = 0; i < n; i++) {
		Attempt &attempt = attempts[order[i]];
		int index = attempt.index;
		if (index >= claimed_count || closed[index] || job_ids[index] != attempt.job_id ||
		    run_leases[index] != attempt.run_lease)
			continue;
		closed[index] = true;  // a duplicate in the same call is refused
		attempt.accepted = true;
		closed_indexes[accepted] = Int32GetDatum(index);
		closed_jobs[accepted] = Int64GetDatum(attempt.job_id);
		closed_leases[accepted] = Int64GetDatum(attempt.run_lease);
		closed_lanes[accepted] = Int64GetDatum(lane_seqs[index]);
		accepted++;
	}
	if (accepted == 0)
		return;

	int64 batch_id = SequenceNext(closure_seq);
	TimestampTz now = GetCurrentTimestamp();
	Datum jobs_array = PointerGetDatum(construct_array(closed_jobs, accepted, INT8OID, 8, true, TYPALIGN_DOUBLE));
	Datum leases_array = PointerGetDatum(construct_array(closed_leases, accepted, INT8OID, 8, true, TYPALIGN_DOUBLE));
	Datum closure[11] = {Int16GetDatum(slot),
	                     Int64GetDatum(batch_id),
	                     Int64GetDatum(claim_batch_id),
	                     Int16GetDatum(ready_slot),
	                     Int64GetDatum(ready_generation),
	                     CStringGetTextDatum("completed"),
	                     Int32GetDatum(accepted),
	                     PointerGetDatum(construct_array(closed_indexes, accepted, INT4OID, 4, true, TYPALIGN_INT)),
	                     jobs_array,
	                     leases_array,
	                     TimestampTzGetDatum(now)};
	bool closure_nulls[11] = {false};
	InsertRingRow(RingTable::kClosureBatches, slot, closure, closure_nulls, 11);
	Datum completion[12] = {Int16GetDatum(ready_slot),
	                        Int64GetDatum(ready_generation),
	                        Int64GetDatum(batch_id),
	                        Int16GetDatum(slot),
	                        Int64GetDatum(claim_batch_id),
	                        queue,
	                        Int16GetDatum(priority),
	                        Int32GetDatum(accepted),
	                        jobs_array,
	                        leases_array,
	                        PointerGetDatum(construct_array(closed_lanes, accepted, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	                        TimestampTzGetDatum(now)};
	bool completion_nulls[12] = {false};
	InsertRingRow(RingTable::kCompletionBatches, ready_slot, completion, completion_nulls, 12);
	// The next claim batch of this call reads with a fresh command id.
	CommandCounterIncrement();
}

// Completes `n` attempts; sets each one's `accepted`. Requires SPI.
void
CompleteAttempts(Attempt *attempts, int n)
{
	int64 epoch;
	RingPositions ring = CurrentRings(&epoch);
	int *order = static_cast<int *>(palloc(sizeof(int) * (n + 1)));
	int decoded = 0;
	for (int i = 0; i < n; i++) {
		Attempt &attempt = attempts[i];
		attempt.accepted = false;
		std::optional<core::Receipt> receipt = core::DecodeReceipt(attempt.receipt_id, ring.claim_slot_count);
		attempt.decoded = receipt.has_value();
		if (!attempt.decoded)
			continue;
		attempt.claim_batch_id = receipt->claim_batch_id;
		attempt.index = receipt->index;
		attempt.claim_slot = receipt->claim_slot;
		order[decoded++] = i;
	}
	sort_attempts = attempts;
	qsort(order, decoded, sizeof(int), CompareAttempts);

	Oid closure_seq = get_relname_relid("closure_batch_id_seq", get_namespace_oid("awa", false));
	for (int start = 0; start < decoded;) {
		int end = start + 1;
		while (end < decoded && attempts[order[end]].claim_batch_id == attempts[order[start]].claim_batch_id &&
		       attempts[order[end]].claim_slot == attempts[order[start]].claim_slot)
			end++;
		CompleteClaimBatch(attempts, order + start, end - start, closure_seq);
		start = end;
	}
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa.complete(job_id, run_lease, receipt_id) -> accepted
AWA_FUNCTION(awa_complete)
{
	RequireArgument(fcinfo, 0, "job_id", false);
	RequireArgument(fcinfo, 1, "run_lease", false);
	RequireArgument(fcinfo, 2, "receipt_id", false);
	Attempt attempt;
	attempt.job_id = PG_GETARG_INT64(0);
	attempt.run_lease = PG_GETARG_INT64(1);
	attempt.receipt_id = PG_GETARG_INT64(2);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	CompleteAttempts(&attempt, 1);
	SPI_finish();
	PG_RETURN_BOOL(attempt.accepted);
}

// awa.complete_many(job_ids, run_leases, receipt_ids) -> (job_id, accepted) in input order
AWA_FUNCTION(awa_complete_many)
{
	awa::core::Violation violation;
	RequireArgument(fcinfo, 0, "job_ids", false);
	RequireArgument(fcinfo, 1, "run_leases", false);
	RequireArgument(fcinfo, 2, "receipt_ids", false);
	Datum *jobs, *leases, *receipts;
	bool *job_nulls, *lease_nulls, *receipt_nulls;
	int n = ArrayElements(PG_GETARG_ARRAYTYPE_P(0), INT8OID, "job_ids", &jobs, &job_nulls);
	int lease_count = ArrayElements(PG_GETARG_ARRAYTYPE_P(1), INT8OID, "run_leases", &leases, &lease_nulls);
	int receipt_count = ArrayElements(PG_GETARG_ARRAYTYPE_P(2), INT8OID, "receipt_ids", &receipts, &receipt_nulls);
	Require(awa::core::CheckSameLength("run_leases", lease_count, "job_ids", n, &violation), violation);
	Require(awa::core::CheckSameLength("receipt_ids", receipt_count, "job_ids", n, &violation), violation);
	Attempt *attempts = static_cast<Attempt *>(palloc0(sizeof(Attempt) * (n + 1)));
	for (int i = 0; i < n; i++) {
		if (job_nulls[i] || lease_nulls[i] || receipt_nulls[i])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("attempt %d has a NULL element", i + 1),
			                errhint("Pass job_id, run_lease and receipt_id as returned by awa.claim.")));
		attempts[i].job_id = DatumGetInt64(jobs[i]);
		attempts[i].run_lease = DatumGetInt64(leases[i]);
		attempts[i].receipt_id = DatumGetInt64(receipts[i]);
	}

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	if (n == 0)
		return (Datum)0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	CompleteAttempts(attempts, n);
	SPI_finish();
	for (int i = 0; i < n; i++) {
		Datum values[2] = {Int64GetDatum(attempts[i].job_id), BoolGetDatum(attempts[i].accepted)};
		bool nulls[2] = {false, false};
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum)0;
}
