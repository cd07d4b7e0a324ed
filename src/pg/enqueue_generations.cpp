// enqueue_generations.cpp: see enqueue_generations.hpp.
#include "pg/enqueue_generations.hpp"

#include "pg/maintenance_shmem.hpp"

namespace awa::pg {

namespace {

using maintenance_shmem::BackendSlot;
using maintenance_shmem::DatabaseStatus;
using maintenance_shmem::MySlot;
using maintenance_shmem::shared;
using maintenance_shmem::status_lock;
using maintenance_shmem::StatusOf;

bool enqueue_published = false;

// This database's status entry as last found: an index into
// shared->databases, -1 when none was; then none is looked for again until an
// entry is made or emptied (shared->status_changes moves). Remembering "none
// for generation G" instead went stale when the generations started again
// from 0 (DROP and CREATE EXTENSION in the same server run): the ring entered
// G again, this session's enqueues into it raised no mark, and the ring stood
// still on fresh rows (found in review). Looking again at every enqueue cost
// a database without an entry (maintenance off) 3,000 instructions a job.
int status_index = -1;
uint64 none_found_at = 0;  // status_changes + 1 when none was found; 0: unset

void
RaiseTo(pg_atomic_uint64 *word, uint64 value)
{
	uint64 current = pg_atomic_read_u64(word);
	while (current < value && !pg_atomic_compare_exchange_u64(word, &current, value)) {
	}
}

// The entry of this database, or NULL. The cached index is checked against
// the entry's database on each use: an entry is evicted only while its
// database has no worker, and one evicted under a use made after the check
// gets a mark of another database's, which only makes that database's
// rotations go ahead (QueueGenerationMayHoldEnqueues).
DatabaseStatus *
OwnStatus()
{
	if (status_index >= 0 && shared->databases[status_index].database == MyDatabaseId)
		return &shared->databases[status_index];
	// Read before the lookup: an entry made after the lookup moves it.
	uint64 changes = pg_atomic_read_u64(&shared->status_changes);
	if (status_index < 0 && none_found_at == changes + 1)
		return NULL;
	// No ereport while the lock is held.
	LWLockAcquire(status_lock, LW_SHARED);
	DatabaseStatus *status = StatusOf(MyDatabaseId, false);
	LWLockRelease(status_lock);
	status_index = status == NULL ? -1 : static_cast<int>(status - shared->databases);
	none_found_at = status == NULL ? changes + 1 : 0;
	return status;
}

}  // namespace

void
PublishEnqueueGeneration(int64 generation)
{
	if (shared == NULL)
		return;
	// Noted before the rows are written: a rotation that reads no mark for
	// the generation afterwards and stands still does so once, and sees the
	// mark at its next turn.
	DatabaseStatus *status = OwnStatus();
	if (status != NULL)
		RaiseTo(&status->queue_written_plus_one, static_cast<uint64>(generation) + 1);
	BackendSlot *slot = MySlot();
	if (slot == NULL)
		return;
	maintenance_shmem::CleanUpAtExit();
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
	BackendSlot *slot = MySlot();
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
	for (int i = 0; i < shared->backend_slot_count; i++) {
		uint64 published = pg_atomic_read_u64(&shared->backends[i].generation_plus_one);
		if (published == 0)
			continue;
		pg_read_barrier();
		if (shared->backends[i].database != MyDatabaseId)
			continue;
		if (static_cast<int64>(published - 1) <= generation)
			return true;
	}
	return false;
}

void
NoteQueueGenerationEntered(int64 generation)
{
	if (shared == NULL)
		return;
	// No ereport while the lock is held.
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	DatabaseStatus *status = StatusOf(MyDatabaseId, true);
	if (status != NULL) {
		uint64 none = 0;
		// The first one only: a generation at or after it that is the
		// current one was entered by a rotation of this run.
		pg_atomic_compare_exchange_u64(&status->queue_first_entered_plus_one, &none,
		                               static_cast<uint64>(generation) + 1);
	}
	LWLockRelease(status_lock);
}

void
NoteQueueGenerationClaimed(int64 generation)
{
	if (shared == NULL)
		return;
	DatabaseStatus *status = OwnStatus();
	if (status != NULL)
		RaiseTo(&status->queue_claimed_plus_one, static_cast<uint64>(generation) + 1);
}

namespace {

// Whether `generation` may hold a row written by what raises `mark` (see the
// header).
bool
MayHold(int64 generation, pg_atomic_uint64 DatabaseStatus::*mark)
{
	if (shared == NULL)
		return true;
	uint64 plus_one = static_cast<uint64>(generation) + 1;
	// No ereport while the lock is held.
	LWLockAcquire(status_lock, LW_SHARED);
	DatabaseStatus *status = StatusOf(MyDatabaseId, false);
	uint64 first_entered = status == NULL ? 0 : pg_atomic_read_u64(&status->queue_first_entered_plus_one);
	uint64 written = status == NULL ? 0 : pg_atomic_read_u64(&(status->*mark));
	LWLockRelease(status_lock);
	bool entered_in_this_run = first_entered != 0 && first_entered <= plus_one;
	return !entered_in_this_run || written >= plus_one;
}

}  // namespace

bool
QueueGenerationMayHoldEnqueues(int64 generation)
{
	return MayHold(generation, &DatabaseStatus::queue_written_plus_one);
}

bool
QueueGenerationMayHoldClaims(int64 generation)
{
	return MayHold(generation, &DatabaseStatus::queue_claimed_plus_one);
}

void
OnEnqueueGenerationTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_PREPARE:
		if (enqueue_published)
			ClearEnqueueGeneration();
		break;
	default:
		break;
	}
}

void
ClearEnqueueGenerationAtExit()
{
	if (enqueue_published)
		ClearEnqueueGeneration();
}

}  // namespace awa::pg
