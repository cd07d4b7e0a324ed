// maintenance_shmem.cpp: see maintenance_shmem.hpp.
#include "pg/maintenance_shmem.hpp"

#include "pg/ddl_holds.hpp"
#include "pg/enqueue_generations.hpp"
#include "pg/ring_epoch.hpp"

extern "C" {
#include "access/twophase.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
}

namespace awa::pg {

namespace maintenance_shmem {

Shared *shared = NULL;
LWLock *status_lock = NULL;

namespace {

int slot_count = 0;

Size
SharedSize()
{
	return add_size(offsetof(Shared, backends), mul_size(sizeof(BackendSlot), slot_count));
}

void
OnExit(int, Datum)
{
	if (shared == NULL)
		return;
	EndRotationAtExit();
	ClearEnqueueGenerationAtExit();
	ReleaseDatabaseHold();
}

}  // namespace

BackendSlot *
MySlot()
{
	if (shared == NULL || MyProc == NULL)
		return NULL;
	int index = MyProc->pgprocno;
	if (index < 0 || index >= shared->backend_slot_count)
		return NULL;
	return &shared->backends[index];
}

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
	ClearStatus(free_entry);
	free_entry->database = database;
	free_entry->last_used = GetCurrentTimestamp();
	return free_entry;
}

void
ClearStatus(DatabaseStatus *entry)
{
	pg_atomic_fetch_add_u64(&shared->status_changes, 1);
	memset(entry, 0, sizeof(*entry));
	pg_atomic_init_u64(&entry->queue_first_entered_plus_one, 0);
	pg_atomic_init_u64(&entry->queue_written_plus_one, 0);
	pg_atomic_init_u64(&entry->queue_claimed_plus_one, 0);
}

void
CleanUpAtExit()
{
	static bool registered = false;
	if (!registered) {
		before_shmem_exit(OnExit, (Datum)0);
		registered = true;
	}
}

}  // namespace maintenance_shmem

using namespace maintenance_shmem;

void
RequestMaintenanceShmem()
{
	slot_count = MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
	RequestAddinShmemSpace(SharedSize());
	RequestNamedLWLockTranche("awa_maintenance", 1);
}

void
StartupMaintenanceShmem()
{
	slot_count = MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bool found;
	shared = static_cast<Shared *>(ShmemInitStruct("awa maintenance", SharedSize(), &found));
	if (!found) {
		memset(shared, 0, SharedSize());
		pg_atomic_init_u64(&shared->epoch_word, 0);
		pg_atomic_init_u64(&shared->primary_since, 0);
		pg_atomic_init_u64(&shared->status_changes, 0);
		uint64 random = 0;
		if (!pg_strong_random(&random, sizeof(random)))
			random = static_cast<uint64>(MyProcPid) * UINT64CONST(0x9E3779B97F4A7C15);
		shared->run_nonce = random ^ static_cast<uint64>(GetCurrentTimestamp());
		shared->launcher_pgprocno = -1;
		shared->backend_slot_count = slot_count;
		for (DatabaseStatus &entry : shared->databases)
			ClearStatus(&entry);
		for (int i = 0; i < slot_count; i++) {
			pg_atomic_init_u64(&shared->backends[i].generation_plus_one, 0);
			pg_atomic_init_u64(&shared->backends[i].truncation_xid, 0);
		}
	}
	status_lock = &(GetNamedLWLockTranche("awa_maintenance"))->lock;
	LWLockRelease(AddinShmemInitLock);
}

}  // namespace awa::pg
