// maintenance_worker.cpp: the background workers that maintain awa.
//
// A launcher (one static worker, started once the server accepts writes:
// after crash recovery, or when a standby is promoted) finds the databases
// that can have awa and starts one maintenance worker per database. A worker
// that finds no awa in its database exits at once; the launcher looks again
// every awa.launcher_naptime, and at once when CREATE EXTENSION awa asks it to.
//
// A maintenance worker runs every due step of awa.run_maintenance in its own
// short transaction (docs/maintenance.md): promotion every
// awa.promote_interval, rescue every awa.rescue_interval, prune then rotation
// of each ring every awa.<ring>_rotate_interval (prune backing off 2^k ticks
// while its slot cannot be reclaimed), DLQ retention every
// awa.cleanup_interval, the periodic step at the earliest tick, and the
// counter rebuild whenever the counters are untrusted. An ERROR in a step is
// logged, its transaction aborted, and the loop goes on; SIGTERM ends the
// worker (FATAL via die()), SIGHUP reloads the configuration. Per-step memory
// lives in a context reset after every step. Cadences are kept on the
// monotonic clock; the wall clock is read once per step, for the deadlines the
// data holds (run_at, next ticks), so setting the system clock neither stops
// maintenance nor makes every task due at once ("Clocks" below).
#include "core/maintenance_outcome.hpp"
#include "core/maintenance_schedule.hpp"
#include "pg/callbacks.hpp"
#include "pg/gucs.hpp"
#include "pg/ddl_holds.hpp"
#include "pg/maintenance_shmem.hpp"
#include "pg/task_status.hpp"
#include "pg/server_run_key.hpp"
#include "pg/worker_registry.hpp"
#include "pg/wakeups.hpp"

#include <algorithm>
#include <type_traits>

extern "C" {
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/hsearch.h"

PGDLLEXPORT void awa_launcher_main(Datum argument);
PGDLLEXPORT void awa_maintenance_main(Datum argument);
}

namespace awa::pg {

namespace {

using core::MaintenanceTask;

// ---------------------------------------------------------------------------
// Clocks (docs/maintenance.md §1, "Clocks")
// ---------------------------------------------------------------------------

// Microseconds of the monotonic clock (CLOCK_MONOTONIC, through instr_time):
// what the task clock and the launcher's naptime read. Setting the system
// clock does not move it, so a clock set back stops no task and a clock set
// forward makes none due early.
int64
MonotonicNow()
{
	instr_time now;
	INSTR_TIME_SET_CURRENT(now);
	return static_cast<int64>(INSTR_TIME_GET_MICROSEC(now));
}

// awa.debug_clock_offset in microseconds: for tests, it stands in for
// setting the system clock by that much in the worker's wall-clock readings.
int64
ClockOffset()
{
	return int64{awa_debug_clock_offset_s} * USECS_PER_SEC;
}

// The worker's one wall-clock reading per step, paired with the monotonic
// clock: the statement start of the step about to begin, which becomes its
// transaction's now() (plus the test offset). Deadlines the step finds are
// chosen against this reading and turned into delays against it, so the
// system clock's jumps cannot postpone them beyond a cadence nor make them
// due early (core::DelayUntilDeadline).
core::ClockPair
ReadStepClock()
{
	SetCurrentStatementStartTimestamp();
	core::ClockPair pair;
	pair.wall = GetCurrentStatementStartTimestamp() + ClockOffset();
	pair.monotonic = MonotonicNow();
	return pair;
}

// ---------------------------------------------------------------------------
// Launcher
// ---------------------------------------------------------------------------
// What the launcher keeps per database it lists: an entry of its own hash
// table (TopMemoryContext), made when the database is first listed and
// removed when it is gone, so there is no cap on the databases of a cluster.
struct Served {
	Oid database;  // the hash key
	BackgroundWorkerHandle *handle;
	int64 next_probe;  // when to start a worker again after it exited (MonotonicNow)
	bool restart;      // start one at once (it stopped while serving awa)
	bool probe;        // the worker was started to see whether the database has awa
};

// Workers started only to see whether their database has awa, running at
// once: a cluster of many databases without awa must not fill
// max_worker_processes with them every awa.launcher_naptime (the workers of
// databases known to have awa, `restart`, are started regardless).
constexpr int kMaxConcurrentProbes = 2;
// The database the launcher last started a probe in: each pass looks at the
// databases from the next OID on (wrapping), so that probe places go round
// every database. In OID order from the lowest, the first databases were
// probed again as soon as their naptime ran out and those with higher OIDs
// waited behind them for ever whenever probing every database took longer
// than awa.launcher_naptime (300 databases at 1 s, 2,400 at the default 60 s
// and 50 ms per probe).
Oid last_probed = InvalidOid;

HTAB *
MakeServedTable()
{
	HASHCTL control;
	memset(&control, 0, sizeof(control));
	control.keysize = sizeof(Oid);
	control.entrysize = sizeof(Served);
	control.hcxt = TopMemoryContext;
	return hash_create("awa launcher databases", 64, &control, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

int
CompareOids(const void *a, const void *b)
{
	Oid x = *static_cast<const Oid *>(a);
	Oid y = *static_cast<const Oid *>(b);
	return x < y ? -1 : (x > y ? 1 : 0);
}

bool
Listed(const Oid *sorted, int count, Oid database)
{
	return bsearch(&database, sorted, count, sizeof(Oid), CompareOids) != NULL;
}

// Every connectable non-template database; palloc'd in the caller's context.
int
ListDatabases(Oid **out)
{
	int n = 0;
	int capacity = 64;
	MemoryContext caller = CurrentMemoryContext;
	Oid *list = static_cast<Oid *>(palloc(sizeof(Oid) * capacity));
	StartTransactionCommand();
	(void)GetTransactionSnapshot();
	Relation relation = table_open(DatabaseRelationId, AccessShareLock);
	TableScanDesc scan = table_beginscan_catalog(relation, 0, NULL);
	HeapTuple tuple;
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL) {
		Form_pg_database database = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple));
		// Templates are skipped: a worker connected to one would make every
		// CREATE DATABASE from it fail.
		if (!database->datallowconn || database->datistemplate)
			continue;
		if (n == capacity) {
			capacity *= 2;
			list = static_cast<Oid *>(repalloc(list, sizeof(Oid) * capacity));
		}
		list[n++] = database->oid;
	}
	table_endscan(scan);
	table_close(relation, AccessShareLock);
	CommitTransactionCommand();
	MemoryContextSwitchTo(caller);
	*out = list;
	return n;
}

// `probe`: the worker is started only to see whether the database has awa
// (bgw_extra[0]; ConnectOrExit then waits for no lock).
bool
StartMaintenanceWorker(Oid database, bool probe, BackgroundWorkerHandle **handle)
{
	BackgroundWorker worker;
	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;  // the launcher restarts it
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "awa");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "awa_maintenance_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "awa maintenance worker for database %u", database);
	snprintf(worker.bgw_type, BGW_MAXLEN, "awa maintenance worker");
	worker.bgw_main_arg = ObjectIdGetDatum(database);
	worker.bgw_extra[0] = probe ? 1 : 0;
	worker.bgw_notify_pid = MyProcPid;
	return RegisterDynamicBackgroundWorker(&worker, handle);
}

bool
Running(BackgroundWorkerHandle *handle)
{
	if (handle == NULL)
		return false;
	pid_t pid;
	BgwHandleStatus status = GetBackgroundWorkerPid(handle, &pid);
	return status == BGWH_STARTED || status == BGWH_NOT_YET_STARTED;
}

// One pass of the launcher: every connectable non-template database gets a
// worker unless one runs there, one exited there less than
// awa.launcher_naptime ago without a reason to restart (it found no awa), or
// a DDL command holds the database. Dropped databases leave `served` and the
// status table. Its memory lives in `pass_context`, reset at the end. Its cost
// is O(databases log databases): the list is sorted, `served` is hashed.
void
ServeDatabases(HTAB *served, MemoryContext pass_context)
{
	MemoryContext previous = MemoryContextSwitchTo(pass_context);
	// Databases whose worker stopped while serving awa, or that just
	// created it, get a worker at once (the status table has kMaxDatabases
	// entries, so no more can be stopped at once).
	Oid *wanted = static_cast<Oid *>(palloc(sizeof(Oid) * maintenance_shmem::kMaxDatabases));
	int wanted_count = TakeStoppedWorkers(wanted, maintenance_shmem::kMaxDatabases);
	// Held before the list is read: a DROP DATABASE that commits
	// and releases its hold after the list was read must not get a
	// worker started into the database it dropped. (One hold per backend.)
	Oid *held = static_cast<Oid *>(palloc(sizeof(Oid) * (MaxBackends + 1)));
	int held_count = DatabasesHeldForDdl(held, MaxBackends + 1);
	qsort(held, held_count, sizeof(Oid), CompareOids);
	Oid *databases;
	int count = ListDatabases(&databases);
	qsort(databases, count, sizeof(Oid), CompareOids);
	// Dropped databases leave the launcher's table and the status table
	// (an entry whose worker still runs stays until it exits).
	ForgetDatabasesExcept(databases, count);
	HASH_SEQ_STATUS scan;
	hash_seq_init(&scan, served);
	for (Served *entry; (entry = static_cast<Served *>(hash_seq_search(&scan))) != NULL;) {
		CHECK_FOR_INTERRUPTS();
		if (Listed(databases, count, entry->database) || Running(entry->handle))
			continue;
		if (entry->handle != NULL)
			pfree(entry->handle);
		(void)hash_search(served, &entry->database, HASH_REMOVE, NULL);
	}
	// (A wanted database the table does not know yet gets its entry below.)
	for (int j = 0; j < wanted_count; j++) {
		Served *entry = static_cast<Served *>(hash_search(served, &wanted[j], HASH_FIND, NULL));
		if (entry != NULL)
			entry->restart = true;
	}
	// Probes still looking (a probe that found awa has claimed its database
	// and serves it).
	int probes = 0;
	hash_seq_init(&scan, served);
	for (Served *entry; (entry = static_cast<Served *>(hash_seq_search(&scan))) != NULL;)
		if (entry->probe && Running(entry->handle) && !DatabaseHasWorker(entry->database))
			probes++;
	bool warned = false;
	int64 now = MonotonicNow();
	int first = static_cast<int>(std::upper_bound(databases, databases + count, last_probed) - databases);
	for (int k = 0; k < count; k++) {
		CHECK_FOR_INTERRUPTS();
		int i = (first + k) % count;
		bool found;
		Served *entry = static_cast<Served *>(hash_search(served, &databases[i], HASH_ENTER, &found));
		if (!found) {
			entry->handle = NULL;
			entry->next_probe = 0;
			entry->restart = false;
			entry->probe = false;
			for (int j = 0; j < wanted_count; j++)
				if (wanted[j] == entry->database)
					entry->restart = true;
		}
		if (Running(entry->handle))
			continue;
		if (entry->handle != NULL) {
			// It exited. Without a reason to restart it (it found no
			// awa), look again after the naptime.
			pfree(entry->handle);
			entry->handle = NULL;
			entry->next_probe = now + int64{awa_launcher_naptime_s} * USECS_PER_SEC;
		}
		if (!entry->restart && now < entry->next_probe)
			continue;
		// A DDL command needs the database alone: not now (the
		// command's end wakes the launcher; `restart` is kept).
		if (bsearch(&entry->database, held, held_count, sizeof(Oid), CompareOids) != NULL ||
		    DatabaseHeldForDdl(entry->database))
			continue;
		// A probe waits for a running one to end (its exit wakes the
		// launcher: bgw_notify_pid).
		if (!entry->restart && probes >= kMaxConcurrentProbes)
			continue;
		entry->probe = !entry->restart;
		MemoryContextSwitchTo(TopMemoryContext);
		bool started = StartMaintenanceWorker(entry->database, entry->probe, &entry->handle);
		MemoryContextSwitchTo(pass_context);
		if (started) {
			entry->restart = false;
			if (entry->probe) {
				probes++;
				last_probed = entry->database;
			}
			continue;
		}
		// No free worker slot. A database known to have awa keeps `restart`
		// and is tried again at the next pass; a probe after the naptime.
		entry->handle = NULL;
		entry->next_probe = now + int64{awa_launcher_naptime_s} * USECS_PER_SEC;
		// Once a pass: every database after the first would say the same.
		if (!warned)
			ereport(WARNING,
			        (errmsg("awa: could not start the maintenance worker of database %u", entry->database),
			         errhint("Raise max_worker_processes: awa needs one per database that has it, plus "
			                 "its launcher.")));
		warned = true;
	}
	MemoryContextSwitchTo(previous);
	MemoryContextReset(pass_context);
}

// ---------------------------------------------------------------------------
// Maintenance worker: the state it keeps between ticks
// ---------------------------------------------------------------------------

// What one maintenance worker keeps from one tick to the next. PODs only: an
// ERROR caught around a step skips no destructor (cpp-boundary.md, rule 2).
struct WorkerState {
	Oid database;
	core::TaskClock clock;          // when each task is next due
	core::PruneBackoff backoff[3];  // each ring's prune: queue, claim, lease
	// Consecutive errors per task: a failing step is retried after
	// min(2^errors s, 60 s) instead of its cadence, so a persistent error
	// (a lock held for long, an extension script older than the library)
	// does not flood the log.
	int error_streak[core::kMaintenanceTaskCount];
	int clock_offset_s;  // awa.debug_clock_offset as last logged
};
static_assert(std::is_trivially_destructible_v<WorkerState>, "lives across PostgreSQL errors");

// What one step reports back to the loop.
struct StepResult {
	core::StepOutcome outcome;  // awa.run_maintenance's outcome; kNone after an error
	// promote: the run_at of the earliest deferred job still to come;
	// periodic: the earliest next tick; 0 when none (or another task).
	TimestampTz deadline;
	core::ClockPair clock;  // the wall clock at the step's start (ReadStepClock)
};

MemoryContext step_context = NULL;  // reset after every step
bool extension_gone = false;        // a step found awa dropped
// This process has advanced every idle lane's claim cursor once since it
// began maintaining a primary (below, RunStep).
bool advanced_since_start = false;

// ---------------------------------------------------------------------------
// Maintenance worker: cadences
// ---------------------------------------------------------------------------
int64
IntervalMs(MaintenanceTask task)
{
	switch (task) {
	case MaintenanceTask::kCounters:
		return 5000;
	case MaintenanceTask::kPromote:
		return awa_promote_interval_ms;
	case MaintenanceTask::kRescue:
		return awa_rescue_interval_ms;
	case MaintenanceTask::kPruneQueue:
	case MaintenanceTask::kRotateQueue:
		return awa_queue_rotate_interval_ms;
	case MaintenanceTask::kPruneClaim:
	case MaintenanceTask::kRotateClaim:
		return awa_claim_rotate_interval_ms;
	case MaintenanceTask::kPruneLease:
	case MaintenanceTask::kRotateLease:
		return awa_lease_rotate_interval_ms;
	case MaintenanceTask::kDlqRetention:
		return int64{awa_cleanup_interval_s} * 1000;
	case MaintenanceTask::kHistory:
		// Cheap when nothing is due (a ledger read); as often as the queue
		// ring moves, so history slots are reclaimed on time for any retention.
		return awa_queue_rotate_interval_ms;
	case MaintenanceTask::kPeriodic:
		return awa_periodic_interval_ms;
	case MaintenanceTask::kReclaimLanes:
		// A pass looks at up to 1,000 lanes (awa._reclaim_lanes): a round
		// over 1,000,000 lanes takes under 3 hours, against a default idle
		// time of a day. An idle time under 10 s is looked for that often
		// (at least every second).
		if (awa_lane_reclaim_after_s >= 0 && awa_lane_reclaim_after_s < 10)
			return Max(awa_lane_reclaim_after_s, 1) * 1000;
		return 10000;
	case MaintenanceTask::kCount:
		break;
	}
	return 1000;
}

int
PruneIndex(MaintenanceTask task)
{
	switch (task) {
	case MaintenanceTask::kPruneQueue:
		return 0;
	case MaintenanceTask::kPruneClaim:
		return 1;
	case MaintenanceTask::kPruneLease:
		return 2;
	default:
		return -1;
	}
}

// Microseconds from `wall_now` until the wall-clock `deadline` (0: none), at
// most the task's cadence and at least 0. `wall_now` is estimated from the
// step's clock pair, the reading the deadline was chosen against.
int64
DelayUntil(MaintenanceTask task, TimestampTz wall_now, TimestampTz deadline)
{
	int64 cadence = IntervalMs(task) * 1000;
	return deadline == 0 ? cadence : core::DelayUntilDeadline(deadline, wall_now, cadence);
}

// ---------------------------------------------------------------------------
// Maintenance worker: one step
// ---------------------------------------------------------------------------

// The one timestamptz a `SELECT min(...)` just run through SPI returned, or 0
// when it returned NULL or failed (rc).
TimestampTz
SingleTimestamp(int rc)
{
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		return 0;
	bool isnull;
	Datum value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? 0 : DatumGetTimestampTz(value);
}

// The run_at of the earliest deferred job due after `after`, or 0 when none
// (an index-only probe of deferred_jobs_due_idx, which holds no parked job:
// without the state filter it cannot be used, and each tick read the whole
// table). Inside a step's SPI connection.
TimestampTz
EarliestDeferredAfter(TimestampTz after)
{
	Oid types[1] = {TIMESTAMPTZOID};
	Datum values[1] = {TimestampTzGetDatum(after)};
	return SingleTimestamp(SPI_execute_with_args("SELECT min(run_at) FROM awa.deferred_jobs WHERE run_at > $1 AND state <> 'available'", 1,
	                                             types, values, NULL, true, 1));
}

// The earliest next tick of the periodic jobs, or 0 when none (an index
// probe of periodic_schedules_due_idx). Inside a step's SPI connection.
TimestampTz
EarliestPeriodicTick()
{
	return SingleTimestamp(SPI_execute("SELECT min(next_run_at) FROM awa.periodic_schedules", true, 1));
}

// Runs one step in its own transaction: awa.run_maintenance('<task>'), its
// outcome in step->outcome (kNone after an error: it is reported, the
// transaction aborted, and the error counted); step->clock is the wall clock
// at its start (ReadStepClock), which is the step's now(). After a promotion,
// step->deadline is the run_at of the earliest deferred job still to come
// (0: none); any commit of a deferred job from before the step began until it
// is published wakes the worker (wakeups.hpp). After the periodic step, it is
// the earliest next tick (0: none).
void
RunStep(MaintenanceTask task, StepResult *step)
{
	step->outcome = core::StepOutcome::kNone;
	step->deadline = 0;
	if (task == MaintenanceTask::kPromote)
		BeginNextPromoteLookup();
	step->clock = ReadStepClock();
	MemoryContext loop_context = CurrentMemoryContext;
	MemoryContextSwitchTo(step_context);
	PG_TRY();
	{
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, core::TaskName(task));
		// A share lock on the extension keeps DROP EXTENSION out for this
		// step (it waits for the step, then the next step sees awa gone),
		// so a step never runs half-way through a drop.
		// It never waits for it: a drop in progress skips the step.
		Oid extension = get_extension_oid("awa", true);
		bool dropping = false;
		if (OidIsValid(extension)) {
			dropping = !ConditionalLockDatabaseObject(ExtensionRelationId, extension, 0, AccessShareLock);
			if (!dropping && !OidIsValid(get_extension_oid("awa", true)))
				extension = InvalidOid;
		}
		if (dropping) {
			step->outcome = core::StepOutcome::kSkippedBusy;
		} else if (!OidIsValid(extension)) {
			extension_gone = true;
		} else {
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "awa: SPI_connect failed");
			// Once per worker process, before its first queue prune: after a
			// restart, a crash or a promotion every lane that enqueued in the
			// run before reads its enqueue cursor as the value logged ahead,
			// a trailing hole the claim cursor is below (lane_cursors.hpp).
			// The advance proves it dead, so idle lanes stop reading as
			// behind; the prune runs the advance only when a slot is due,
			// which an idle ring never is (found by a reviewer;
			// test/t/067_trailing_hole_after_restart.pl).
			if (task == MaintenanceTask::kPruneQueue && !advanced_since_start) {
				if (SPI_execute("SELECT awa._advance_cursors()", false, 0) != SPI_OK_SELECT)
					elog(ERROR, "awa: the advance of idle lanes' claim cursors failed");
				advanced_since_start = true;
			}
			char query[128];
			snprintf(query, sizeof(query), "SELECT outcome FROM awa.run_maintenance('%s')", core::TaskName(task));
			int rc = SPI_execute(query, false, 0);
			if (rc != SPI_OK_SELECT)
				elog(ERROR, "awa: maintenance step %s failed: SPI code %d", core::TaskName(task), rc);
			if (SPI_processed == 1) {
				char *value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
				// awa._note_outcome refused any other word before this.
				if (value != NULL && !core::ParseOutcome(value, &step->outcome))
					elog(ERROR, "awa: maintenance step %s reported an unknown outcome \"%s\"", core::TaskName(task),
					     value);
			}
			if (task == MaintenanceTask::kPromote)
				// From the step's start: a job that came due while the
				// promotion ran is found too (rows it promoted are gone).
				// Chosen against the step's own wall reading, the one its
				// delay is measured from: a job the step's now() saw as not
				// yet due is never "due at once" when that reading is off.
				step->deadline = EarliestDeferredAfter(step->clock.wall);
			if (task == MaintenanceTask::kPeriodic)
				step->deadline = EarliestPeriodicTick();
			SPI_finish();
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
		pgstat_report_activity(STATE_IDLE, NULL);
		// A background worker has no idle loop that flushes its table
		// statistics; without this its inserts, deletes and truncations
		// would never reach pg_stat_all_tables (rate-limited to 1 s).
		(void)pgstat_report_stat(false);
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(loop_context);
		EmitErrorReport();
		AbortOutOfAnyTransaction();
		FlushErrorState();
		RESUME_INTERRUPTS();
		pgstat_report_activity(STATE_IDLE, NULL);
		NoteTaskError(task);
		step->outcome = core::StepOutcome::kNone;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(loop_context);
	MemoryContextReset(step_context);
}

// ---------------------------------------------------------------------------
// Maintenance worker: planning the next run of a task
// ---------------------------------------------------------------------------

// The next promotion runs at the earliest deferred job's run_at when that
// comes before the cadence, and it is published for the committers of new
// deferred jobs (they set the latch when theirs is due earlier).
void
SchedulePromotion(WorkerState *worker, const StepResult &step)
{
	int64 now = MonotonicNow();
	TimestampTz wall_now = step.clock.WallAt(now);
	int64 delay = DelayUntil(MaintenanceTask::kPromote, wall_now, step.deadline);
	worker->clock.Ran(MaintenanceTask::kPromote, now, delay);
	// Committers compare their run_at with the real clock: publish on it
	// (the test hook's offset shifts only the worker's own readings).
	PublishNextPromote(wall_now - ClockOffset() + delay);
}

// The periodic step runs again at the earliest next tick when that comes
// before its cadence (awa.periodic_interval bounds how late a schedule
// created or changed meanwhile is seen). A tick still due after a step that
// enqueued nothing belongs to a schedule another transaction holds (or one
// that failed): it waits for the cadence, not a busy loop.
void
SchedulePeriodic(WorkerState *worker, const StepResult &step)
{
	int64 now = MonotonicNow();
	TimestampTz wall_now = step.clock.WallAt(now);
	TimestampTz next_tick = step.deadline;
	if (next_tick != 0 && next_tick <= wall_now && step.outcome != core::StepOutcome::kEnqueued)
		next_tick = 0;
	worker->clock.Ran(MaintenanceTask::kPeriodic, now, DelayUntil(MaintenanceTask::kPeriodic, wall_now, next_tick));
}

// After a step that succeeded: its error streak ends, and promote and
// periodic are planned again from the deadline the step found.
void
ScheduleAfterSuccess(WorkerState *worker, MaintenanceTask task, const StepResult &step)
{
	worker->error_streak[static_cast<int>(task)] = 0;
	if (task == MaintenanceTask::kPromote)
		SchedulePromotion(worker, step);
	else if (task == MaintenanceTask::kPeriodic)
		SchedulePeriodic(worker, step);
	else if (task == MaintenanceTask::kReclaimLanes && step.outcome == core::StepOutcome::kReclaimed)
		// A pass reclaims at most 100 lanes (fn_reclaim_lanes.cpp): while
		// there are more, the next pass comes within a second.
		worker->clock.Ran(task, MonotonicNow(), Min(IntervalMs(task), int64{1000}) * 1000);
}

// After a step that failed: it is retried after min(2^errors s, 60 s), or its
// cadence when that is longer, so a persistent error does not flood the log.
// A failed promotion publishes its retry time, so commits of deferred jobs do
// not wake the worker into retrying at their rate. `now` is the tick's
// MonotonicNow.
void
ScheduleRetry(WorkerState *worker, MaintenanceTask task, int64 now, const StepResult &step)
{
	int &streak = worker->error_streak[static_cast<int>(task)];
	streak = Min(streak + 1, 6);
	int64 retry_ms = Min(int64{1000} << streak, int64{60000});
	int64 retry_us = Max(retry_ms, IntervalMs(task)) * 1000;
	worker->clock.Ran(task, now, retry_us);
	if (task == MaintenanceTask::kPromote)
		PublishNextPromote(step.clock.WallAt(now) - ClockOffset() + retry_us);
}

// A ring's prune that is backing off skips this tick ("Prune back-off" in
// docs/maintenance.md §1); the skip is published for maintenance_status.
bool
PruneSkipsTick(WorkerState *worker, MaintenanceTask task)
{
	int prune = PruneIndex(task);
	if (prune < 0 || worker->backoff[prune].TakeTick())
		return false;
	NoteTaskBackoff(task, worker->backoff[prune].level(), worker->backoff[prune].skip_remaining());
	return true;
}

// A prune that could not reclaim its slot (skipped_active, blocked) backs off
// further; one that reclaimed or found nothing to do resets the back-off.
void
RecordPruneOutcome(WorkerState *worker, MaintenanceTask task, core::StepOutcome outcome)
{
	int prune = PruneIndex(task);
	if (prune < 0)
		return;
	worker->backoff[prune].Record(core::PruneReclaimableLater(outcome), awa_prune_max_backoff_level);
	NoteTaskBackoff(task, worker->backoff[prune].level(), worker->backoff[prune].skip_remaining());
}

// ---------------------------------------------------------------------------
// Maintenance worker: the steps of the loop
// ---------------------------------------------------------------------------

// DROP DATABASE and the other commands that need the database without
// other connections (database_ddl.hpp): the worker leaves between steps, and
// the launcher starts it again when the command has ended.
void
LeaveIfDatabaseHeld(Oid database)
{
	if (!DatabaseHeldForDdl(database))
		return;
	ereport(LOG, (errmsg("awa: a command needs database %u without other connections; maintenance worker leaves",
	                     database)));
	proc_exit(0);
}

// Logs a new awa.debug_clock_offset once the worker reads its wall clock
// with it: a test waits for this line to know the reload was taken.
void
LogClockOffset(WorkerState *worker)
{
	if (awa_debug_clock_offset_s == worker->clock_offset_s)
		return;
	worker->clock_offset_s = awa_debug_clock_offset_s;
	ereport(LOG, (errmsg("awa: maintenance worker of database %u reads the wall clock %d s off "
	                     "(awa.debug_clock_offset)",
	                     worker->database, worker->clock_offset_s)));
}

// Handles what arrived while the worker ran or slept: SIGTERM ends it (FATAL
// through die(), at this interrupt check), a DDL command that needs the
// database alone makes it leave, and SIGHUP reloads the configuration (a new
// cadence applies from each task's next run).
void
HandleSignals(WorkerState *worker)
{
	CHECK_FOR_INTERRUPTS();
	LeaveIfDatabaseHeld(worker->database);
	if (ConfigReloadPending) {
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
		LogClockOffset(worker);
	}
}

// Whether the worker maintains now: awa.maintenance_enabled is on and the
// server accepts writes. Off, it only sleeps and handles signals.
bool
MaintenanceActive()
{
	return awa_maintenance_enabled && !RecoveryInProgress();
}

// Runs one due task: plans its next run one cadence ahead, lets a prune that
// is backing off skip this tick, runs the step in its own transaction, then
// plans again from what the step found (a deadline) or how it failed (the
// error back-off). Between steps the worker leaves for a DDL hold and answers
// SIGTERM.
void
RunTask(WorkerState *worker, MaintenanceTask task, int64 now)
{
	worker->clock.Ran(task, now, IntervalMs(task) * 1000);
	if (PruneSkipsTick(worker, task))
		return;
	StepResult step;
	RunStep(task, &step);
	LeaveIfDatabaseHeld(worker->database);
	if (step.outcome == core::StepOutcome::kNone)
		ScheduleRetry(worker, task, now, step);
	else
		ScheduleAfterSuccess(worker, task, step);
	RecordPruneOutcome(worker, task, step.outcome);
	CHECK_FOR_INTERRUPTS();
}

// Runs every task due now, once each, in MaintenanceTask order (periodic
// before the rotations: a transaction that rotated cannot enqueue). Stops
// when a step found the extension dropped.
void
RunDueTasks(WorkerState *worker)
{
	int64 now = MonotonicNow();
	for (int i = 0; i < core::kMaintenanceTaskCount && !extension_gone; i++) {
		MaintenanceTask task = static_cast<MaintenanceTask>(i);
		if (worker->clock.Due(task, now))
			RunTask(worker, task, now);
	}
}

// A step found awa dropped from the database: the worker forgets the
// database's status and exits (the launcher starts one again only when
// CREATE EXTENSION asks, or after awa.launcher_naptime).
void
ExitIfExtensionDropped(const WorkerState *worker)
{
	if (!extension_gone)
		return;
	ereport(LOG, (errmsg("awa: extension dropped from database %u; maintenance worker exits", worker->database)));
	ForgetDatabase();
	proc_exit(0);
}

// Sleeps on the latch until the next task is due, 1 s at most (so a reload
// or maintenance turned on is seen within a second); the postmaster's death
// ends the worker. A latch set by the commit of a deferred job due before the
// planned promotion (wakeups.hpp) makes promote due now, so the job is
// promoted at its run_at; not while promote is on its error back-off.
void
SleepUntilNextDue(WorkerState *worker)
{
	int64 wait_us = awa_maintenance_enabled ? worker->clock.UntilNextDue(MonotonicNow(), USECS_PER_SEC)
	                                        : USECS_PER_SEC;
	// Rounded up: a promotion planned for a job's run_at must not run before it.
	long wait_ms = static_cast<long>((wait_us + 999) / 1000);
	int events = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	if ((events & WL_LATCH_SET) && worker->error_streak[static_cast<int>(MaintenanceTask::kPromote)] == 0)
		worker->clock.Ran(MaintenanceTask::kPromote, MonotonicNow(), 0);
}

// ---------------------------------------------------------------------------
// Maintenance worker: start
// ---------------------------------------------------------------------------

// Connects to `database` and claims it, or exits: when a DDL command holds
// the database, when it has no awa (quietly: the launcher looks again after
// the naptime), or when another worker serves it.
void
ConnectOrExit(Oid database)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	// A DDL command that needs the database alone began meanwhile: not
	// even connect (a hold set while connecting is seen in the loop).
	if (DatabaseHeldForDdl(database))
		proc_exit(0);
	BackgroundWorkerInitializeConnectionByOid(database, InvalidOid, 0);
	pgstat_report_appname("awa maintenance");

	StartTransactionCommand();
	// A probe (bgw_extra[0]) holds one of the launcher's two probe places
	// while it runs: it must not wait for a lock on pg_extension (LOCK TABLE,
	// VACUUM FULL or REINDEX of the catalog in a long transaction), or two
	// such databases would keep every other database from being probed
	// (test/t/050_probe_never_waits.pl). It leaves, and the launcher probes
	// its database again after awa.launcher_naptime. A worker restarted in a
	// database known to have awa takes no probe place and waits.
	if (MyBgworkerEntry != NULL && MyBgworkerEntry->bgw_extra[0] != 0 &&
	    (!ConditionalLockRelationOid(ExtensionRelationId, AccessShareLock) ||
	     !ConditionalLockRelationOid(ExtensionNameIndexId, AccessShareLock))) {
		CommitTransactionCommand();
		ereport(LOG, (errmsg("awa: database %u: pg_extension is locked; the launcher looks at it again later",
		                     database)));
		proc_exit(0);
	}
	bool present = OidIsValid(get_extension_oid("awa", true));
	CommitTransactionCommand();
	if (!present)
		proc_exit(0);
	if (!ClaimDatabaseWorker()) {
		if (DatabaseWorkerPid() == 0)
			ereport(WARNING, (errmsg("awa: no room for the maintenance status of database %u; no worker runs there",
			                         database),
			                  errhint("Every status entry belongs to a database whose worker is running.")));
		proc_exit(0);
	}
}

// The session settings every step runs under, and the steps' memory context.
void
ConfigureSession()
{
	// A safety net: no statement of a step waits longer than this for a lock
	// (the steps take try-locks, and prune bounds its own wait).
	(void)set_config_option("lock_timeout", "1s", PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SET, true, 0, false);
	// Steps commit without waiting for their WAL flush, so a prune releases
	// its slot lock sooner. Safe: a step lost in a crash is lost whole and
	// redone (a truncation, a rotation, a promotion or a rescue), and any
	// later synchronous commit that depends on it flushes it first (WAL is
	// replayed in order).
	(void)set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SET, true, 0, false);
	// No JIT (as awa.run_maintenance sets too): loading LLVM would grow the
	// worker by tens of MiB for queries that gain nothing from it.
	(void)set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SET, true, 0, false);
	// Steps run under READ COMMITTED whatever the database's default
	// (ALTER DATABASE ... SET default_transaction_isolation): each proves
	// what it may truncate with snapshots taken after its locks, and
	// awa.run_maintenance refuses any other isolation level.
	(void)set_config_option("default_transaction_isolation", "read committed", PGC_USERSET, PGC_S_SESSION,
	                        GUC_ACTION_SET, true, 0, false);
	step_context = AllocSetContextCreate(TopMemoryContext, "awa maintenance step", ALLOCSET_DEFAULT_SIZES);
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

void
awa_launcher_main(Datum)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("awa launcher");
	DispatchEveryTransaction();
	RegisterLauncher();
	// Recovery has finished: this run is a primary from now (the first
	// start of the run counts; a rate limit set before starts empty).
	NotePrimaryRunStart();

	HTAB *served = MakeServedTable();
	MemoryContext pass_context =
	    AllocSetContextCreate(TopMemoryContext, "awa launcher loop", ALLOCSET_DEFAULT_SIZES);
	for (;;) {
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending) {
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (awa_maintenance_enabled)
			ServeDatabases(served, pass_context);
		// Once a second; sooner when CREATE EXTENSION, a worker's exit or the
		// end of a DDL hold sets the latch.
		(void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

void
awa_maintenance_main(Datum argument)
{
	WorkerState worker = {};
	worker.database = DatumGetObjectId(argument);
	DispatchEveryTransaction();
	ConnectOrExit(worker.database);
	ConfigureSession();
	ereport(LOG, (errmsg("awa: maintenance worker started for database %u", worker.database)));
	LogClockOffset(&worker);
	for (;;) {
		HandleSignals(&worker);
		if (MaintenanceActive())
			RunDueTasks(&worker);
		ExitIfExtensionDropped(&worker);
		SleepUntilNextDue(&worker);
	}
}

namespace awa::pg {

void
RegisterMaintenanceLauncher()
{
	BackgroundWorker worker;
	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "awa");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "awa_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "awa maintenance launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "awa maintenance launcher");
	RegisterBackgroundWorker(&worker);
}

}  // namespace awa::pg
