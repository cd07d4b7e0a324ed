// ddl_holds.cpp: see ddl_holds.hpp.
#include "pg/ddl_holds.hpp"

#include "pg/maintenance_shmem.hpp"
#include "pg/worker_registry.hpp"

extern "C" {
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procarray.h"
}

namespace awa::pg {

namespace {

using maintenance_shmem::BackendSlot;
using maintenance_shmem::DatabaseStatus;
using maintenance_shmem::MySlot;
using maintenance_shmem::shared;
using maintenance_shmem::status_lock;
using maintenance_shmem::StatusOf;

bool database_held = false;

}  // namespace

void
HoldDatabaseForDdl(Oid database)
{
	BackendSlot *slot = MySlot();
	if (slot == NULL || !OidIsValid(database))
		return;
	maintenance_shmem::CleanUpAtExit();
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
	BackendSlot *slot = MySlot();
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
	for (int i = 0; i < shared->backend_slot_count && n < capacity; i++) {
		Oid database = shared->backends[i].held_database;
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
	for (int i = 0; i < shared->backend_slot_count; i++)
		if (shared->backends[i].held_database == database)
			return true;
	return false;
}

void
OnDdlHoldTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_PREPARE:
		// Committed: a dropped database is gone for the launcher too.
		if (database_held)
			ReleaseDatabaseHold();
		break;
	default:
		break;
	}
}

}  // namespace awa::pg
