// fn_maintenance.cpp: the C building blocks of awa.run_maintenance and
// awa.storage_status (the steps themselves are PL/pgSQL in sql/install/4x-60; they
// run once a second at most, so their planning cost does not matter, and the
// proofs read best as SQL).
#include "pg/core_calls.hpp"
#include "pg/arguments.hpp"
#include "pg/counters.hpp"
#include "pg/guard.hpp"
#include "pg/pending_enqueues.hpp"
#include "pg/enqueue_generations.hpp"
#include "pg/ring_epoch.hpp"
#include "pg/task_status.hpp"
#include "pg/worker_registry.hpp"

using namespace awa::pg;
using awa::core::MaintenanceTask;
using awa::core::StepOutcome;

namespace {

MaintenanceTask
TaskArgument(FunctionCallInfo fcinfo, int index)
{
	RequireArgument(fcinfo, index, "task", false);
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(index));
	MaintenanceTask task;
	if (!awa::core::ParseTaskName(name, &task))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown maintenance task \"%s\"", name),
		                errhint("See awa._task_names() for the tasks.")));
	return task;
}

}  // namespace

// awa._task_names() -> text[]: every maintenance task, in the order one worker
// tick runs them (src/core/maintenance_schedule.cpp is the one list; the SQL
// of awa.run_maintenance reads it from here).
AWA_FUNCTION(awa_internal_task_names)
{
	Datum names[awa::core::kMaintenanceTaskCount];
	for (int i = 0; i < awa::core::kMaintenanceTaskCount; i++)
		names[i] = CStringGetTextDatum(awa::core::TaskName(static_cast<MaintenanceTask>(i)));
	PG_RETURN_ARRAYTYPE_P(construct_array(names, awa::core::kMaintenanceTaskCount, TEXTOID, -1, false, TYPALIGN_INT));
}

// awa._outcome_names() -> text[]: every outcome a step may report
// (src/core/maintenance_outcome.cpp is the one list; test/sql/maintenance.sql
// checks the steps' sources against it).
AWA_FUNCTION(awa_internal_outcome_names)
{
	Datum names[awa::core::kStepOutcomeCount];
	int n = 0;
	for (int i = 0; i < awa::core::kStepOutcomeCount; i++)
		if (static_cast<StepOutcome>(i) != StepOutcome::kNone)
			names[n++] = CStringGetTextDatum(awa::core::OutcomeName(static_cast<StepOutcome>(i)));
	PG_RETURN_ARRAYTYPE_P(construct_array(names, n, TEXTOID, -1, false, TYPALIGN_INT));
}

// awa._rotation_begin(): this transaction appends to a rotation ledger; the
// ring epoch is odd until it ends (ring_epoch.hpp). Jobs it enqueued before
// (a periodic step of the same run_maintenance) go in first, into the
// generation they were enqueued under: after the rotation it could no longer
// append them (pending_enqueues.hpp).
AWA_FUNCTION(awa_internal_rotation_begin)
{
	FlushPendingEnqueues();
	BeginRotation();
	PG_RETURN_VOID();
}

// awa._enqueue_generation_in_use(generation): an enqueue of this database is
// between reserving lane_seqs for a queue-ring generation <= `generation` and
// inserting its rows.
AWA_FUNCTION(awa_internal_enqueue_generation_in_use)
{
	RequireArgument(fcinfo, 0, "generation", false);
	PG_RETURN_BOOL(EnqueueGenerationInUse(PG_GETARG_INT64(0)));
}

// awa._queue_generation_entered(generation): a rotation of the queue ring
// enters `generation` (called in the rotating transaction, before it
// commits; enqueue_generations.hpp).
AWA_FUNCTION(awa_internal_queue_generation_entered)
{
	RequireArgument(fcinfo, 0, "generation", false);
	NoteQueueGenerationEntered(PG_GETARG_INT64(0));
	PG_RETURN_VOID();
}

// awa._queue_generation_may_hold_enqueues(generation): false only when
// every ready row of `generation` was written by a prune's carry: it was
// entered during this server run and no enqueue of this database has
// written into it since (enqueue_generations.hpp).
AWA_FUNCTION(awa_internal_queue_generation_may_hold_enqueues)
{
	RequireArgument(fcinfo, 0, "generation", false);
	PG_RETURN_BOOL(QueueGenerationMayHoldEnqueues(PG_GETARG_INT64(0)));
}

// awa._queue_generation_may_hold_claims(generation): false only when every
// claim evidence row of `generation` was written by a prune's carry (the
// claims of attempts still open): it was entered during this server run and
// no claim of this database has written evidence into it since.
AWA_FUNCTION(awa_internal_queue_generation_may_hold_claims)
{
	RequireArgument(fcinfo, 0, "generation", false);
	PG_RETURN_BOOL(QueueGenerationMayHoldClaims(PG_GETARG_INT64(0)));
}

// awa._note_outcome(task, outcome): records a step's outcome for
// awa.storage_status. An outcome outside core::StepOutcome is refused, so a
// misspelt one fails its step rather than being recorded.
AWA_FUNCTION(awa_internal_note_outcome)
{
	MaintenanceTask task = TaskArgument(fcinfo, 0);
	RequireArgument(fcinfo, 1, "outcome", false);
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	StepOutcome outcome;
	// "error" is the worker's record of a failed step, never a step's outcome.
	if (!awa::core::ParseOutcome(name, &outcome) || outcome == StepOutcome::kError)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("unknown maintenance outcome \"%s\" of task %s", name, awa::core::TaskName(task)),
		                errhint("See awa._outcome_names() for the outcomes a step may report.")));
	NoteTaskOutcome(task, outcome);
	PG_RETURN_VOID();
}

// awa._ensure_counters() -> trusted | unavailable
AWA_FUNCTION(awa_internal_ensure_counters)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	bool trusted = EnsureCountersTrusted();
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(awa::core::OutcomeName(trusted ? StepOutcome::kTrusted : StepOutcome::kUnavailable)));
}

// awa._free_key_entries() -> {"key_entries_live", "key_entries_retired",
// "key_entries_freed"}: the counters
// task's pass over the key entries of this database (counters.hpp).
AWA_FUNCTION(awa_internal_free_key_entries)
{
	KeyEntryPass pass = FreeIdleKeyEntries();
	char json[160];
	snprintf(json, sizeof(json), "{\"key_entries_live\": %lld, \"key_entries_retired\": %lld, \"key_entries_freed\": %lld}",
	         static_cast<long long>(pass.live), static_cast<long long>(pass.retired),
	         static_cast<long long>(pass.freed));
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));
}

// awa._wake_launcher(): asks the maintenance launcher to start this
// database's worker once this transaction commits (CREATE EXTENSION calls
// it, so a new database is served at once).
AWA_FUNCTION(awa_internal_wake_launcher)
{
	WakeLauncherAtCommit();
	PG_RETURN_VOID();
}

// awa.maintenance_status() -> one row per task: the last outcome in this
// database (by the worker or awa.run_maintenance), when, how often, errors,
// the prune back-off, and the worker's pid.
AWA_FUNCTION(awa_maintenance_status)
{
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	int worker_pid = DatabaseWorkerPid();
	for (int i = 0; i < awa::core::kMaintenanceTaskCount; i++) {
		MaintenanceTask task = static_cast<MaintenanceTask>(i);
		TaskStatus status;
		bool found = ReadTaskStatus(task, &status);
		Datum values[8];
		bool nulls[8] = {false};
		values[0] = CStringGetTextDatum(awa::core::TaskName(task));
		if (found) {
			values[1] = CStringGetTextDatum(awa::core::OutcomeName(status.outcome));
			values[2] = TimestampTzGetDatum(status.at);
			values[3] = Int64GetDatum(status.runs);
			values[4] = Int64GetDatum(status.errors);
			values[5] = Int32GetDatum(status.backoff_level);
			values[6] = Int32GetDatum(status.skip_remaining);
		} else {
			nulls[1] = nulls[2] = true;
			values[3] = Int64GetDatum(0);
			values[4] = Int64GetDatum(0);
			values[5] = Int32GetDatum(0);
			values[6] = Int32GetDatum(0);
		}
		if (worker_pid != 0)
			values[7] = Int32GetDatum(worker_pid);
		else
			nulls[7] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum)0;
}

// awa._receipt(batch_id, index, slot) -> the receipt id (src/core/receipt.hpp).
AWA_FUNCTION(awa_internal_receipt)
{
	RequireArgument(fcinfo, 0, "batch_id", false);
	RequireArgument(fcinfo, 1, "index", false);
	RequireArgument(fcinfo, 2, "slot", false);
	int64 batch_id = PG_GETARG_INT64(0);
	int32 index = PG_GETARG_INT32(1);
	int32 slot = PG_GETARG_INT32(2);
	if (batch_id < 0 || batch_id > awa::core::kMaxClaimBatchId || index < 0 || index > awa::core::kMaxBatchIndex ||
	    slot < 0 || slot >= awa::core::kMaxClaimSlots)
		ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE), errmsg("awa: receipt fields out of range"),
		                errhint("batch_id 0..%lld, index 0..%d, slot 0..%d.",
		                        static_cast<long long>(awa::core::kMaxClaimBatchId), awa::core::kMaxBatchIndex,
		                        awa::core::kMaxClaimSlots - 1)));
	PG_RETURN_INT64(awa::core::EncodeReceipt(awa::core::Receipt{batch_id, index, slot}));
}
