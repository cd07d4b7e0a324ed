// fn_complete.cpp: awa.complete and awa.complete_many.
//
// Completion closes live attempts (attempts.hpp): per claim batch it appends
// one closure batch (claim ring) and one completion batch (queue ring, the
// terminal history). Nothing is updated or deleted on this path, except the
// heartbeat row of an attempt that had one and the unique key of a unique job.
// An attempt that is not the live one (wrong job, run lease or receipt, or
// already closed) is refused and changes nothing.
#include "pg/arguments.hpp"
#include "pg/attempts.hpp"
#include "pg/guard.hpp"

using namespace awa::pg;

// awa.complete(job_id, run_lease, receipt_id) -> accepted
AWA_FUNCTION(awa_complete)
{
	Attempt attempt = AttemptArgument(fcinfo, 0);
	MemoryContext caller = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	ProcessAttempts(&attempt, 1, AttemptAction::kComplete, NULL, caller);
	SPI_finish();
	PG_RETURN_BOOL(attempt.closed_now);
}

// awa.complete_many(job_ids, run_leases, receipt_ids) -> (job_id, accepted) in input order
AWA_FUNCTION(awa_complete_many)
{
	Attempt *attempts;
	int n = AttemptArrays(fcinfo, 0, &attempts);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	if (n == 0)
		return (Datum)0;
	MemoryContext caller = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	ProcessAttempts(attempts, n, AttemptAction::kComplete, NULL, caller);
	SPI_finish();
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();  // every loop over a call's jobs can be cancelled
		Datum values[2] = {Int64GetDatum(attempts[i].job_id), BoolGetDatum(attempts[i].closed_now)};
		bool nulls[2] = {false, false};
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum)0;
}
