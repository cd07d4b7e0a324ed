// worker_registry.cpp: see worker_registry.hpp.
#include "pg/worker_registry.hpp"

#include "pg/maintenance_shmem.hpp"

extern "C" {
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
}

namespace awa::pg {

namespace {

using maintenance_shmem::DatabaseStatus;
using maintenance_shmem::shared;
using maintenance_shmem::status_lock;
using maintenance_shmem::ClearStatus;
using maintenance_shmem::StatusOf;

bool wake_launcher_at_commit = false;

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
		ClearStatus(status);
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
		Oid database = entry.database;
		bool exists = bsearch(&database, databases, count, sizeof(Oid), [](const void *a, const void *b) {
			Oid x = *static_cast<const Oid *>(a);
			Oid y = *static_cast<const Oid *>(b);
			return x < y ? -1 : (x > y ? 1 : 0);
		}) != NULL;
		if (!exists)
			ClearStatus(&entry);
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

bool
DatabaseHasWorker(Oid database)
{
	if (shared == NULL)
		return false;
	LWLockAcquire(status_lock, LW_SHARED);
	DatabaseStatus *status = StatusOf(database, false);
	bool has = status != NULL && status->worker_pid != 0;
	LWLockRelease(status_lock);
	return has;
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

void
OnWorkerRegistryTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_PREPARE:
		// CREATE EXTENSION asked for a worker: only now can it see awa.
		if (wake_launcher_at_commit && event == XACT_EVENT_COMMIT)
			WakeLauncher();
		wake_launcher_at_commit = false;
		break;
	default:
		break;
	}
}

}  // namespace awa::pg
