// enqueue_generations.cpp: see enqueue_generations.hpp.
#include "pg/enqueue_generations.hpp"

#include "pg/maintenance_shmem.hpp"

namespace awa::pg {

namespace {

using maintenance_shmem::BackendSlot;
using maintenance_shmem::MySlot;
using maintenance_shmem::shared;

bool enqueue_published = false;

}  // namespace

void
PublishEnqueueGeneration(int64 generation)
{
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
