// fn_counts.cpp: awa.queue_counts and awa.rebuild_counters, plus
// awa._count_move, the counter primitive awa's SQL functions use.
//
// awa.queue_counts answers from the shared-memory counters (counters.hpp): its
// cost depends on the number of queues, never on the backlog. When the
// counters cannot be trusted it answers from the exact pass, like
// awa.queue_counts_exact.
#include "pg/core_calls.hpp"
#include "pg/arguments.hpp"
#include "pg/counters.hpp"
#include "pg/guard.hpp"
#include "pg/gucs.hpp"
#include "pg/ring_truncations.hpp"
#include "pg/spi_plans.hpp"
#include "pg/subtransaction.hpp"

namespace awa::pg {

namespace {

using core::kJobStateCount;

void
EmitRow(ReturnSetInfo *rsinfo, Datum queue, const int64 *counts)
{
	Datum values[1 + kJobStateCount];
	bool nulls[1 + kJobStateCount] = {false};
	values[0] = queue;
	for (int s = 0; s < kJobStateCount; s++)
		values[s + 1] = Int64GetDatum(counts[s]);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

int
StateArgument(FunctionCallInfo fcinfo, int index)
{
	if (PG_ARGISNULL(index))
		return kNoState;
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(index));
	core::JobState state;
	if (!core::ParseJobState(name, strlen(name), &state))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown job state \"%s\"", name),
		                errhint("States are available, scheduled, retryable, running, completed, failed, "
		                        "cancelled and dlq.")));
	return static_cast<int>(state);
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa.queue_counts(queue) -> (queue, available, scheduled, retryable, running,
//                             completed, failed, cancelled, dlq)
AWA_FUNCTION(awa_queue_counts)
{
	text *queue = PG_ARGISNULL(0) ? NULL : QueueArgument(fcinfo, 0);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	if (EnsureCountersTrusted()) {
		if (awa_debug_counts_read_lock != 0)
			(void)DirectFunctionCall1(pg_advisory_xact_lock_int8, Int64GetDatum(awa_debug_counts_read_lock));
		// The counters may stop being trusted after the check (a transaction
		// that moved jobs of too many queues, a rebuild): every queue is read
		// before any row is emitted, and one read that finds them untrusted
		// sends the whole answer to the exact pass (it emitted zeros before).
		if (queue != NULL) {
			QueueCounts counts;
			if (ReadCounters(queue, &counts)) {
				SPI_finish();
				EmitRow(rsinfo, PointerGetDatum(queue), counts.count);
				return (Datum)0;
			}
		} else {
			Execute(Stmt::kQueueList, 0, NULL, NULL);
			uint64 count = SPI_processed;
			QueueCounts *counts = static_cast<QueueCounts *>(palloc(sizeof(QueueCounts) * (count + 1)));
			bool all = true;
			for (uint64 i = 0; i < count && all; i++) {
				CHECK_FOR_INTERRUPTS();  // outside counters_lock (ReadCounters takes it briefly)
				bool isnull;
				Datum name = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
				all = ReadCounters(DatumGetTextPP(name), &counts[i]);
			}
			if (all) {
				for (uint64 i = 0; i < count; i++) {
					bool isnull;
					EmitRow(rsinfo, SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull),
					        counts[i].count);
				}
				SPI_finish();
				return (Datum)0;
			}
		}
	}
	// The exact pass: the counters are not trusted. It reads the ring tables
	// through their parents, which locks every child: it runs in an internal
	// subtransaction rolled back once its rows are copied out (into this SPI
	// context), so a caller left idle in its transaction holds no ring slot
	// (test/sql/idle_locks.sql); the rows are stored after it (a tuplestore
	// that spills must not lose its file with the subtransaction).
	struct ExactRow {
		Datum queue;
		int64 counts[kJobStateCount];
	};
	int64 zero[kJobStateCount] = {0};
	ExactRow *exact = NULL;
	ExactRow **exact_out = &exact;
	// (Under REPEATABLE READ the pass reads with the transaction's snapshot:
	// after it, the subtransaction is kept, with its locks, unless no prune
	// truncated a slot after that snapshot, and 40001 is raised if one did:
	// RingLocksReleasable, ring_truncations.hpp.)
	int rows = 0;
	int *rows_out = &rows;
	(void)RunInSubtransaction(CurrentMemoryContext, true, [exact_out, queue, rows_out]() {
		Datum key[1] = {PointerGetDatum(queue)};
		char nulls[2] = {static_cast<char>(queue == NULL ? 'n' : ' '), '\0'};
		// The ring tables first, in a statement of its own: the pass's
		// snapshot is then taken after any prune it waited for (TRUNCATE is
		// not MVCC-safe: an older snapshot read the pruned slot empty, and
		// not where the prune put its jobs; found by adversarial testing).
		Execute(Stmt::kHoldRings, 0, NULL, NULL);
		Execute(Stmt::kCountsScanOne, 0, key, nulls);
		*exact_out = static_cast<ExactRow *>(palloc(sizeof(ExactRow) * (SPI_processed + 1)));
		for (uint64 i = 0; i < SPI_processed; i++) {
			CHECK_FOR_INTERRUPTS();  // every loop over rows can be cancelled
			bool isnull;
			ExactRow &row = (*exact_out)[i];
			row.queue = PointerGetDatum(DatumGetTextPCopy(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull)));
			for (int s = 0; s < kJobStateCount; s++)
				row.counts[s] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, s + 2, &isnull));
		}
		*rows_out = static_cast<int>(SPI_processed);
		return RingLocksReleasable() ? 0 : 1;
	});
	for (int i = 0; i < rows; i++)
		EmitRow(rsinfo, exact[i].queue, exact[i].counts);
	if (queue != NULL && rows == 0)
		EmitRow(rsinfo, PointerGetDatum(queue), zero);
	SPI_finish();
	return (Datum)0;
}

// awa.rebuild_counters() -> whether the counters are trusted afterwards:
// recounts every queue of this database with one exact pass.
AWA_FUNCTION(awa_rebuild_counters)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	bool trusted = RebuildCounters();
	SPI_finish();
	PG_RETURN_BOOL(trusted);
}

// awa._count_move(queue, from_state, to_state, n): records that n jobs of the
// queue moved between states in this transaction (NULL: none).
AWA_FUNCTION(awa_internal_count_move)
{
	text *queue = QueueArgument(fcinfo, 0);
	int from = StateArgument(fcinfo, 1);
	int to = StateArgument(fcinfo, 2);
	int64 n = PG_ARGISNULL(3) ? 1 : PG_GETARG_INT64(3);
	CountMove(queue, from, to, n);
	PG_RETURN_VOID();
}

// awa._count_transfer(from_queue, from_state, to_queue, to_state, n): records
// that n jobs left from_state of from_queue and entered to_state of to_queue
// in this transaction (NULL state: none), as no job event (an operator's
// move: awa.move_jobs).
AWA_FUNCTION(awa_internal_count_transfer)
{
	text *from_queue = QueueArgument(fcinfo, 0);
	int from = StateArgument(fcinfo, 1);
	text *to_queue = QueueArgument(fcinfo, 2);
	int to = StateArgument(fcinfo, 3);
	int64 n = PG_ARGISNULL(4) ? 1 : PG_GETARG_INT64(4);
	CountTransfer(from_queue, from, to_queue, to, n);
	PG_RETURN_VOID();
}
