// fn_metrics.cpp: the shared-memory readings behind awa's metrics surface
// (docs/monitoring.md): event totals per queue, and the claims waiting for
// work. awa.queue_metrics (SQL) joins them with the counts.
#include "pg/core_calls.hpp"
#include "pg/claim_waiters.hpp"
#include "pg/counters.hpp"
#include "pg/guard.hpp"

using namespace awa::pg;

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
