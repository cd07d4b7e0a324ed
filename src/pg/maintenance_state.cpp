// maintenance_state.cpp: see maintenance_state.hpp.
#include "pg/maintenance_state.hpp"

extern "C" {
#include "access/twophase.h"
#include "access/xlog.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
}

namespace awa::pg {

namespace {

using core::kMaintenanceTaskCount;
using core::MaintenanceTask;

// Databases whose status is kept at once. An entry without a live worker is
// evicted (least recently used first) when a new database needs one, and a
// worker leaving a database whose extension was dropped frees its entry.
constexpr int kMaxDatabases = 256;

// Epoch word: high 16 bits count rotation transactions in flight, low 48 bits
// count finished ones. The epoch is version * 2 + (in flight ? 1 : 0).
constexpr uint64 kInFlightUnit = uint64{1} << 48;
constexpr uint64 kVersionMask = kInFlightUnit - 1;

struct DatabaseStatus {
	Oid database;
	TimestampTz last_used;
	int worker_pid;
	bool stopped;  // the worker exited; the launcher restarts it
	TaskStatus tasks[kMaintenanceTaskCount];
};

// What one backend (by pgprocno) publishes to the others.
struct EnqueueSlot {
	pg_atomic_uint64 generation_plus_one;  // 0: none published
	Oid database;
	// A DDL command of this backend needs this database without other
	// connections (DROP DATABASE, CREATE DATABASE ... TEMPLATE, ...):
	// InvalidOid when none. Written only by the owner.
	Oid held_database;
};

struct MaintenanceShared {
	pg_atomic_uint64 epoch_word;
	// Drawn when the shared memory is made: at every start and every crash
	// restart (ServerRunKey).
	uint64 run_nonce;
	int launcher_pgprocno;  // -1: no launcher
	int enqueue_slot_count;
	DatabaseStatus databases[kMaxDatabases];
	EnqueueSlot enqueue[FLEXIBLE_ARRAY_MEMBER];
};

MaintenanceShared *shared = NULL;
LWLock *status_lock = NULL;
int slot_count = 0;
shmem_request_hook_type previous_request_hook = NULL;
shmem_startup_hook_type previous_startup_hook = NULL;

// Rotation transactions this backend has in flight (0 or 1).
bool rotation_in_flight = false;
bool enqueue_published = false;
bool database_held = false;
bool wake_launcher_at_commit = false;

Size
SharedSize()
{
	return add_size(offsetof(MaintenanceShared, enqueue), mul_size(sizeof(EnqueueSlot), slot_count));
}

void
RequestShmem()
{
	if (previous_request_hook)
		previous_request_hook();
	slot_count = MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
	RequestAddinShmemSpace(SharedSize());
	RequestNamedLWLockTranche("awa_maintenance", 1);
}

void
StartupShmem()
{
	if (previous_startup_hook)
		previous_startup_hook();
	slot_count = MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bool found;
	shared = static_cast<MaintenanceShared *>(ShmemInitStruct("awa maintenance", SharedSize(), &found));
	if (!found) {
		memset(shared, 0, SharedSize());
		pg_atomic_init_u64(&shared->epoch_word, 0);
		uint64 random = 0;
		if (!pg_strong_random(&random, sizeof(random)))
			random = static_cast<uint64>(MyProcPid) * UINT64CONST(0x9E3779B97F4A7C15);
		shared->run_nonce = random ^ static_cast<uint64>(GetCurrentTimestamp());
		shared->launcher_pgprocno = -1;
		shared->enqueue_slot_count = slot_count;
		for (int i = 0; i < slot_count; i++)
			pg_atomic_init_u64(&shared->enqueue[i].generation_plus_one, 0);
	}
	status_lock = &(GetNamedLWLockTranche("awa_maintenance"))->lock;
	LWLockRelease(AddinShmemInitLock);
}

// This transaction began a rotation (also without shared memory).
bool rotated_in_transaction = false;

void
EndRotation()
{
	rotated_in_transaction = false;
	if (!rotation_in_flight)
		return;
	rotation_in_flight = false;
	// One atomic step: one fewer in flight, one more finished.
	pg_atomic_fetch_add_u64(&shared->epoch_word, 1 - kInFlightUnit);
}

void
OnTransactionEvent(XactEvent event, void *)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_PREPARE:
		EndRotation();
		if (enqueue_published)
			ClearEnqueueGeneration();
		// The DDL command that held a database has ended with its
		// transaction (committed: a dropped database is gone for the
		// launcher too).
		if (database_held)
			ReleaseDatabaseHold();
		// CREATE EXTENSION asked for a worker: only now can it see awa.
		if (wake_launcher_at_commit && event == XACT_EVENT_COMMIT)
			WakeLauncher();
		wake_launcher_at_commit = false;
		break;
	case XACT_EVENT_PRE_PREPARE:
		if (rotation_in_flight)
			ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			                errmsg("awa: a transaction that rotated a ring cannot be prepared"),
			                errhint("Run awa.run_maintenance in a transaction that is not prepared.")));
		break;
	default:
		break;
	}
}

void
OnExit(int, Datum)
{
	if (shared == NULL)
		return;
	if (rotation_in_flight)
		EndRotation();
	if (enqueue_published)
		ClearEnqueueGeneration();
	if (database_held)
		ReleaseDatabaseHold();
}

// OnExit, registered once per backend by whatever publishes first.
void
CleanUpAtExit()
{
	static bool registered = false;
	if (!registered) {
		before_shmem_exit(OnExit, (Datum)0);
		registered = true;
	}
}

// What this backend publishes (by pgprocno); NULL without shared memory.
EnqueueSlot *
MySlot()
{
	if (shared == NULL || MyProc == NULL)
		return NULL;
	int index = MyProc->pgprocno;
	if (index < 0 || index >= shared->enqueue_slot_count)
		return NULL;
	return &shared->enqueue[index];
}

// The status entry of `database` (caller holds status_lock, exclusively when
// `create`). Creating may evict the least recently used entry that has no
// worker; NULL when every entry has one.
DatabaseStatus *
StatusOf(Oid database, bool create)
{
	DatabaseStatus *free_entry = NULL;
	DatabaseStatus *evictable = NULL;
	for (DatabaseStatus &entry : shared->databases) {
		if (entry.database == database) {
			if (create)
				entry.last_used = GetCurrentTimestamp();
			return &entry;
		}
		if (free_entry == NULL && entry.database == InvalidOid)
			free_entry = &entry;
		if (entry.database != InvalidOid && entry.worker_pid == 0 &&
		    (evictable == NULL || entry.last_used < evictable->last_used))
			evictable = &entry;
	}
	if (!create)
		return NULL;
	if (free_entry == NULL)
		free_entry = evictable;
	if (free_entry == NULL)
		return NULL;
	memset(free_entry, 0, sizeof(*free_entry));
	free_entry->database = database;
	free_entry->last_used = GetCurrentTimestamp();
	return free_entry;
}

void
ReleaseWorker(int, Datum)
{
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	DatabaseStatus *status = StatusOf(MyDatabaseId, false);
	if (status != NULL && status->worker_pid == MyProcPid) {
		status->worker_pid = 0;
		status->stopped = true;
	}
	int launcher = shared->launcher_pgprocno;
	LWLockRelease(status_lock);
	if (launcher >= 0)
		SetLatch(&ProcGlobal->allProcs[launcher].procLatch);
}

void
ReleaseLauncher(int, Datum)
{
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	if (shared->launcher_pgprocno == MyProc->pgprocno)
		shared->launcher_pgprocno = -1;
	LWLockRelease(status_lock);
}

}  // namespace

void
InstallMaintenanceState()
{
	previous_request_hook = shmem_request_hook;
	shmem_request_hook = RequestShmem;
	previous_startup_hook = shmem_startup_hook;
	shmem_startup_hook = StartupShmem;
	RegisterXactCallback(OnTransactionEvent, NULL);
}

int64
SharedRingEpoch()
{
	if (shared == NULL)
		return 1;
	pg_memory_barrier();
	uint64 word = pg_atomic_read_u64(&shared->epoch_word);
	pg_memory_barrier();
	int64 version = static_cast<int64>(word & kVersionMask);
	return version * 2 + ((word >> 48) != 0 ? 1 : 0);
}

uint64
ServerRunKey()
{
	if (shared == NULL || RecoveryInProgress())
		return 0;
	// A promotion starts a new timeline; a start or crash restart a new nonce.
	uint64 key = shared->run_nonce ^ (static_cast<uint64>(GetWALInsertionTimeLine()) * UINT64CONST(0x9E3779B97F4A7C15));
	key &= ~(uint64{1} << 63);
	return key == 0 ? 1 : key;
}

bool
RotationInThisTransaction()
{
	return rotated_in_transaction;
}

void
BeginRotation()
{
	if (shared == NULL) {
		// Not preloaded: no epoch to keep, but the flag must still end with
		// the transaction.
		static bool callback_registered = false;
		if (!callback_registered) {
			RegisterXactCallback(OnTransactionEvent, NULL);
			callback_registered = true;
		}
		rotated_in_transaction = true;
		return;
	}
	rotated_in_transaction = true;
	if (rotation_in_flight)
		return;
	CleanUpAtExit();
	rotation_in_flight = true;
	pg_atomic_fetch_add_u64(&shared->epoch_word, kInFlightUnit);
}

void
PublishEnqueueGeneration(int64 generation)
{
	EnqueueSlot *slot = MySlot();
	if (slot == NULL)
		return;
	CleanUpAtExit();
	slot->database = MyDatabaseId;
	pg_write_barrier();
	pg_atomic_write_u64(&slot->generation_plus_one, static_cast<uint64>(generation) + 1);
	// Published before the reservation and the epoch read that follow.
	pg_memory_barrier();
	enqueue_published = true;
}

void
ClearEnqueueGeneration()
{
	enqueue_published = false;
	EnqueueSlot *slot = MySlot();
	if (slot == NULL)
		return;
	pg_memory_barrier();
	pg_atomic_write_u64(&slot->generation_plus_one, 0);
}

bool
EnqueueGenerationInUse(int64 generation)
{
	if (shared == NULL)
		return false;
	pg_memory_barrier();
	for (int i = 0; i < shared->enqueue_slot_count; i++) {
		uint64 published = pg_atomic_read_u64(&shared->enqueue[i].generation_plus_one);
		if (published == 0)
			continue;
		pg_read_barrier();
		if (shared->enqueue[i].database != MyDatabaseId)
			continue;
		if (static_cast<int64>(published - 1) <= generation)
			return true;
	}
	return false;
}

namespace {

// One run of `task` in this database: its outcome ("error" for a failed step).
void
RecordRun(MaintenanceTask task, const char *outcome, bool failed)
{
	if (shared == NULL)
		return;
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	DatabaseStatus *status = StatusOf(MyDatabaseId, true);
	if (status != NULL) {
		TaskStatus &t = status->tasks[static_cast<int>(task)];
		strlcpy(t.outcome, outcome, sizeof(t.outcome));
		t.at = GetCurrentTimestamp();
		t.runs++;
		if (failed)
			t.errors++;
	}
	LWLockRelease(status_lock);
}

}  // namespace

void
NoteTaskOutcome(MaintenanceTask task, const char *outcome)
{
	RecordRun(task, outcome, false);
}

void
NoteTaskError(MaintenanceTask task)
{
	RecordRun(task, "error", true);
}

void
NoteTaskBackoff(MaintenanceTask task, int level, int64 skip_remaining)
{
	if (shared == NULL)
		return;
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	DatabaseStatus *status = StatusOf(MyDatabaseId, true);
	if (status != NULL) {
		status->tasks[static_cast<int>(task)].backoff_level = level;
		status->tasks[static_cast<int>(task)].skip_remaining = static_cast<int32>(skip_remaining);
	}
	LWLockRelease(status_lock);
}

bool
ReadTaskStatus(MaintenanceTask task, TaskStatus *out)
{
	if (shared == NULL)
		return false;
	LWLockAcquire(status_lock, LW_SHARED);
	DatabaseStatus *status = StatusOf(MyDatabaseId, false);
	bool found = status != NULL && status->tasks[static_cast<int>(task)].runs > 0;
	if (found)
		*out = status->tasks[static_cast<int>(task)];
	LWLockRelease(status_lock);
	return found;
}

bool
ClaimDatabaseWorker()
{
	if (shared == NULL)
		return false;
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	DatabaseStatus *status = StatusOf(MyDatabaseId, true);
	bool claimed = false;
	if (status != NULL && (status->worker_pid == 0 || kill(status->worker_pid, 0) != 0)) {
		status->worker_pid = MyProcPid;
		status->stopped = false;
		claimed = true;
	}
	LWLockRelease(status_lock);
	if (claimed)
		before_shmem_exit(ReleaseWorker, (Datum)0);
	return claimed;
}

void
ForgetDatabase()
{
	if (shared == NULL)
		return;
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	DatabaseStatus *status = StatusOf(MyDatabaseId, false);
	if (status != NULL)
		memset(status, 0, sizeof(*status));
	LWLockRelease(status_lock);
}

void
ForgetDatabasesExcept(const Oid *databases, int count)
{
	if (shared == NULL)
		return;
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	for (DatabaseStatus &entry : shared->databases) {
		if (entry.database == InvalidOid || entry.worker_pid != 0)
			continue;
		bool exists = false;
		for (int i = 0; i < count && !exists; i++)
			exists = databases[i] == entry.database;
		if (!exists)
			memset(&entry, 0, sizeof(entry));
	}
	LWLockRelease(status_lock);
}

int
DatabaseWorkerPid()
{
	if (shared == NULL)
		return 0;
	LWLockAcquire(status_lock, LW_SHARED);
	DatabaseStatus *status = StatusOf(MyDatabaseId, false);
	int pid = status != NULL ? status->worker_pid : 0;
	LWLockRelease(status_lock);
	return pid;
}

void
RegisterLauncher()
{
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	shared->launcher_pgprocno = MyProc->pgprocno;
	LWLockRelease(status_lock);
	before_shmem_exit(ReleaseLauncher, (Datum)0);
}

void
WakeLauncher()
{
	WakeLauncherFor(MyDatabaseId);
}

void
WakeLauncherFor(Oid database)
{
	if (shared == NULL)
		return;
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	DatabaseStatus *status = StatusOf(database, true);
	if (status != NULL && status->worker_pid == 0)
		status->stopped = true;  // the launcher starts a worker at once
	int launcher = shared->launcher_pgprocno;
	LWLockRelease(status_lock);
	if (launcher >= 0)
		SetLatch(&ProcGlobal->allProcs[launcher].procLatch);
}

void
WakeLauncherAtCommit()
{
	if (shared != NULL)
		wake_launcher_at_commit = true;
}

int
TakeStoppedWorkers(Oid *out, int capacity)
{
	int n = 0;
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	for (DatabaseStatus &entry : shared->databases)
		if (entry.database != InvalidOid && entry.stopped && n < capacity) {
			out[n++] = entry.database;
			entry.stopped = false;
		}
	LWLockRelease(status_lock);
	return n;
}


// ---------------------------------------------------------------------------
// Databases a DDL command needs alone (database_ddl.hpp)
// ---------------------------------------------------------------------------

void
HoldDatabaseForDdl(Oid database)
{
	EnqueueSlot *slot = MySlot();
	if (slot == NULL || !OidIsValid(database))
		return;
	CleanUpAtExit();
	slot->held_database = database;
	database_held = true;
	// Published before the worker is asked to leave, so that it, the
	// launcher and a worker starting now all see the hold.
	pg_memory_barrier();
	LWLockAcquire(status_lock, LW_SHARED);
	DatabaseStatus *status = StatusOf(database, false);
	int worker = status != NULL ? status->worker_pid : 0;
	LWLockRelease(status_lock);
	if (worker != 0) {
		PGPROC *proc = BackendPidGetProc(worker);
		if (proc != NULL)
			SetLatch(&proc->procLatch);
	}
}

void
ReleaseDatabaseHold()
{
	if (!database_held)
		return;
	database_held = false;
	EnqueueSlot *slot = MySlot();
	if (slot == NULL)
		return;
	Oid database = slot->held_database;
	pg_memory_barrier();
	slot->held_database = InvalidOid;
	// The database's worker left for the command: the launcher starts one
	// there now, if the database is still there (and has awa).
	if (OidIsValid(database))
		WakeLauncherFor(database);
}

int
DatabasesHeldForDdl(Oid *out, int capacity)
{
	if (shared == NULL)
		return 0;
	int n = 0;
	pg_memory_barrier();
	for (int i = 0; i < shared->enqueue_slot_count && n < capacity; i++) {
		Oid database = shared->enqueue[i].held_database;
		if (OidIsValid(database))
			out[n++] = database;
	}
	return n;
}

bool
DatabaseHeldForDdl(Oid database)
{
	if (shared == NULL)
		return false;
	pg_memory_barrier();
	for (int i = 0; i < shared->enqueue_slot_count; i++)
		if (shared->enqueue[i].held_database == database)
			return true;
	return false;
}

}  // namespace awa::pg
