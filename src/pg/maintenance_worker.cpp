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
// awa.cleanup_interval, and the counter rebuild whenever the counters are
// untrusted. An ERROR in a step is logged, its transaction aborted, and the
// loop goes on; SIGTERM ends the worker (FATAL via die()), SIGHUP reloads the
// configuration. Per-step memory lives in a context reset after every step.
#include "core/maintenance_schedule.hpp"
#include "pg/gucs.hpp"
#include "pg/ddl_holds.hpp"
#include "pg/task_status.hpp"
#include "pg/worker_registry.hpp"
#include "pg/wakeups.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"

PGDLLEXPORT void awa_launcher_main(Datum argument);
PGDLLEXPORT void awa_maintenance_main(Datum argument);
}

namespace awa::pg {

namespace {

using core::MaintenanceTask;

// Databases the launcher serves at once (the rest wait for a free entry and
// get a WARNING); every database is listed, whatever their number.
constexpr int kMaxLauncherDatabases = 256;

// ---------------------------------------------------------------------------
// Launcher
// ---------------------------------------------------------------------------
struct Served {
	Oid database;
	BackgroundWorkerHandle *handle;
	TimestampTz next_probe;  // when to start a worker again after it exited
	bool restart;            // start one at once (it stopped while serving awa)
};

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

bool
StartMaintenanceWorker(Oid database, BackgroundWorkerHandle **handle)
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

// ---------------------------------------------------------------------------
// Maintenance worker
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

// Microseconds from `current` until `next_due` (0: nothing due), at most the
// task's cadence and at least 0.
int64
DelayUntil(MaintenanceTask task, TimestampTz current, TimestampTz next_due)
{
	int64 delay = IntervalMs(task) * 1000;
	return next_due == 0 ? delay : Max(int64{0}, Min(delay, next_due - current));
}

// The next promotion runs at the earliest deferred job's run_at when that
// comes before the cadence, and it is published for the committers of new
// deferred jobs (they set the latch when theirs is due earlier).
void
SchedulePromotion(core::TaskClock *clock, TimestampTz next_deferred)
{
	TimestampTz current = GetCurrentTimestamp();
	int64 delay = DelayUntil(MaintenanceTask::kPromote, current, next_deferred);
	clock->Ran(MaintenanceTask::kPromote, current, delay);
	PublishNextPromote(current + delay);
}

// The periodic step runs again at the earliest next tick when that comes
// before its cadence (awa.periodic_interval bounds how late a schedule
// created or changed meanwhile is seen). A tick still due after a step that
// enqueued nothing belongs to a schedule another transaction holds (or one
// that failed): it waits for the cadence, not a busy loop.
void
SchedulePeriodic(core::TaskClock *clock, TimestampTz next_tick, bool enqueued)
{
	TimestampTz current = GetCurrentTimestamp();
	if (next_tick != 0 && next_tick <= current && !enqueued)
		next_tick = 0;
	clock->Ran(MaintenanceTask::kPeriodic, current, DelayUntil(MaintenanceTask::kPeriodic, current, next_tick));
}

MemoryContext step_context = NULL;
bool extension_gone = false;

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
// (an index-only probe of deferred_jobs_due_idx). Inside a step's SPI
// connection.
TimestampTz
EarliestDeferredAfter(TimestampTz after)
{
	Oid types[1] = {TIMESTAMPTZOID};
	Datum values[1] = {TimestampTzGetDatum(after)};
	return SingleTimestamp(SPI_execute_with_args("SELECT min(run_at) FROM awa.deferred_jobs WHERE run_at > $1", 1,
	                                             types, values, NULL, true, 1));
}

// The earliest next tick of the periodic jobs, or 0 when none (an index
// probe of periodic_schedules_due_idx). Inside a step's SPI connection.
TimestampTz
EarliestPeriodicTick()
{
	return SingleTimestamp(SPI_execute("SELECT min(next_run_at) FROM awa.periodic_schedules", true, 1));
}

// Runs one step in its own transaction; its outcome is copied into `outcome`
// ("" after an error). Errors are reported and the transaction is aborted.
// After a promotion, *next_deferred is the run_at of the earliest deferred
// job still to come (0: none); any commit of a deferred job from before the
// step began until it is published wakes the worker (wakeups.hpp). After the
// periodic step, it is the earliest next tick (0: none).
void
RunStep(MaintenanceTask task, char *outcome, size_t outcome_size, TimestampTz *next_deferred)
{
	outcome[0] = '\0';
	*next_deferred = 0;
	if (task == MaintenanceTask::kPromote)
		BeginNextPromoteLookup();
	MemoryContext loop_context = CurrentMemoryContext;
	MemoryContextSwitchTo(step_context);
	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
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
			strlcpy(outcome, "skipped_busy", outcome_size);
		} else if (!OidIsValid(extension)) {
			extension_gone = true;
		} else {
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "awa: SPI_connect failed");
			char query[128];
			snprintf(query, sizeof(query), "SELECT outcome FROM awa.run_maintenance('%s')", core::TaskName(task));
			int rc = SPI_execute(query, false, 0);
			if (rc != SPI_OK_SELECT)
				elog(ERROR, "awa: maintenance step %s failed: SPI code %d", core::TaskName(task), rc);
			if (SPI_processed == 1) {
				char *value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
				if (value != NULL)
					strlcpy(outcome, value, outcome_size);
			}
			if (task == MaintenanceTask::kPromote)
				// From the step's start: a job that came due while the
				// promotion ran is found too (rows it promoted are gone).
				*next_deferred = EarliestDeferredAfter(GetCurrentTransactionStartTimestamp());
			if (task == MaintenanceTask::kPeriodic)
				*next_deferred = EarliestPeriodicTick();
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
		outcome[0] = '\0';
	}
	PG_END_TRY();
	MemoryContextSwitchTo(loop_context);
	MemoryContextReset(step_context);
}

}  // namespace

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
	RegisterLauncher();

	static Served served[kMaxLauncherDatabases];
	int served_count = 0;
	MemoryContext loop_context =
	    AllocSetContextCreate(TopMemoryContext, "awa launcher loop", ALLOCSET_DEFAULT_SIZES);
	for (;;) {
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending) {
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (awa_maintenance_enabled) {
			MemoryContext previous = MemoryContextSwitchTo(loop_context);
			// Workers that stopped while serving awa are restarted at once.
			// Databases whose worker stopped while serving awa, or that just
			// created it, get a worker at once.
			Oid wanted[kMaxLauncherDatabases];
			int wanted_count = TakeStoppedWorkers(wanted, kMaxLauncherDatabases);
			// Held before the list is read: a DROP DATABASE that commits
			// and releases its hold after the list was read must not get a
			// worker started into the database it dropped.
			Oid held[kMaxLauncherDatabases];
			int held_count = DatabasesHeldForDdl(held, kMaxLauncherDatabases);
			Oid *databases;
			int count = ListDatabases(&databases);
			// Dropped databases leave the launcher's list and the status table.
			ForgetDatabasesExcept(databases, count);
			int kept = 0;
			for (int j = 0; j < served_count; j++) {
				bool exists = false;
				for (int i = 0; i < count && !exists; i++)
					exists = databases[i] == served[j].database;
				if (exists || Running(served[j].handle))
					served[kept++] = served[j];
				else if (served[j].handle != NULL)
					pfree(served[j].handle);
			}
			served_count = kept;
			TimestampTz now = GetCurrentTimestamp();
			for (int i = 0; i < count; i++) {
				Served *entry = NULL;
				for (int j = 0; j < served_count; j++)
					if (served[j].database == databases[i])
						entry = &served[j];
				if (entry == NULL) {
					if (served_count == kMaxLauncherDatabases) {
						ereport(WARNING, (errmsg("awa: more than %d databases; database %u gets no maintenance worker "
						                         "for now",
						                         kMaxLauncherDatabases, databases[i])));
						continue;
					}
					entry = &served[served_count++];
					entry->database = databases[i];
					entry->handle = NULL;
					entry->next_probe = 0;
					entry->restart = false;
				}
				for (int j = 0; j < wanted_count; j++)
					if (wanted[j] == entry->database)
						entry->restart = true;
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
				bool held_then = false;
				for (int j = 0; j < held_count && !held_then; j++)
					held_then = held[j] == entry->database;
				if (held_then || DatabaseHeldForDdl(entry->database))
					continue;
				entry->restart = false;
				MemoryContextSwitchTo(TopMemoryContext);
				if (!StartMaintenanceWorker(entry->database, &entry->handle)) {
					entry->handle = NULL;
					entry->next_probe = now + int64{awa_launcher_naptime_s} * USECS_PER_SEC;
					ereport(WARNING,
					        (errmsg("awa: could not start the maintenance worker of database %u", entry->database),
					         errhint("Raise max_worker_processes: awa needs one per database that has it, plus "
					                 "its launcher.")));
				}
				MemoryContextSwitchTo(loop_context);
			}
			MemoryContextSwitchTo(previous);
			MemoryContextReset(loop_context);
		}
		(void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

void
awa_maintenance_main(Datum argument)
{
	Oid database = DatumGetObjectId(argument);
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
	ereport(LOG, (errmsg("awa: maintenance worker started for database %u", database)));

	step_context = AllocSetContextCreate(TopMemoryContext, "awa maintenance step", ALLOCSET_DEFAULT_SIZES);
	awa::core::TaskClock clock;
	awa::core::PruneBackoff backoff[3];
	// Consecutive errors per task: a failing step is retried after
	// min(2^errors s, 60 s) instead of its cadence, so a persistent error
	// (a lock held for long, an extension script older than the library)
	// does not flood the log.
	int error_streak[awa::core::kMaintenanceTaskCount] = {0};
	char outcome[64];
	for (;;) {
		CHECK_FOR_INTERRUPTS();
		LeaveIfDatabaseHeld(database);
		if (ConfigReloadPending) {
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		int64 now = GetCurrentTimestamp();
		if (awa_maintenance_enabled && !RecoveryInProgress()) {
			for (int i = 0; i < awa::core::kMaintenanceTaskCount && !extension_gone; i++) {
				MaintenanceTask task = static_cast<MaintenanceTask>(i);
				if (!clock.Due(task, now))
					continue;
				clock.Ran(task, now, IntervalMs(task) * 1000);
				int prune = PruneIndex(task);
				if (prune >= 0 && !backoff[prune].TakeTick()) {
					NoteTaskBackoff(task, backoff[prune].level(), backoff[prune].skip_remaining());
					continue;
				}
				TimestampTz next_deferred;
				RunStep(task, outcome, sizeof(outcome), &next_deferred);
				LeaveIfDatabaseHeld(database);
				if (task == MaintenanceTask::kPromote && outcome[0] != '\0')
					SchedulePromotion(&clock, next_deferred);
				if (task == MaintenanceTask::kPeriodic && outcome[0] != '\0')
					SchedulePeriodic(&clock, next_deferred, strcmp(outcome, "enqueued") == 0);
				if (outcome[0] == '\0') {
					error_streak[i] = Min(error_streak[i] + 1, 6);
					int64 retry_ms = Min(int64{1000} << error_streak[i], int64{60000});
					clock.Ran(task, now, Max(retry_ms, IntervalMs(task)) * 1000);
					// A failed promotion publishes its retry time, so commits
					// of deferred jobs do not wake the worker into retrying
					// at their rate.
					if (task == MaintenanceTask::kPromote)
						PublishNextPromote(now + Max(retry_ms, IntervalMs(task)) * 1000);
				} else {
					error_streak[i] = 0;
				}
				if (prune >= 0) {
					bool later = strcmp(outcome, "skipped_active") == 0 || strcmp(outcome, "blocked") == 0;
					backoff[prune].Record(later, awa_prune_max_backoff_level);
					NoteTaskBackoff(task, backoff[prune].level(), backoff[prune].skip_remaining());
				}
				CHECK_FOR_INTERRUPTS();
			}
			if (extension_gone) {
				ereport(LOG, (errmsg("awa: extension dropped from database %u; maintenance worker exits", database)));
				ForgetDatabase();
				proc_exit(0);
			}
		}
		int64 wait_us = clock.UntilNextDue(GetCurrentTimestamp(), 1000 * 1000);
		if (!awa_maintenance_enabled)
			wait_us = 1000 * 1000;
		// Rounded up: a promotion planned for a job's run_at must not run
		// before it.
		long wait_ms = static_cast<long>((wait_us + 999) / 1000);
		int events =
		    WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		// A commit of a deferred job due before the planned promotion set
		// the latch (wakeups.hpp): promote now, and look again for the
		// earliest one.
		if ((events & WL_LATCH_SET) && error_streak[static_cast<int>(MaintenanceTask::kPromote)] == 0)
			clock.Ran(MaintenanceTask::kPromote, GetCurrentTimestamp(), 0);
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
