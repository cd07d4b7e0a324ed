// task_status.hpp: the last outcome of every maintenance task, per database,
// for awa.storage_status and awa.maintenance_status.
//
// Recorded by the maintenance worker and by awa.run_maintenance
// (awa._note_outcome) in shared memory (maintenance_shmem.hpp), so any
// session can read what the worker did. Without shared_preload_libraries
// nothing is recorded and nothing is found.
#pragma once

#include "core/maintenance_outcome.hpp"
#include "core/maintenance_schedule.hpp"
#include "pg/postgres_headers.hpp"
#include <type_traits>

namespace awa::pg {

struct TaskStatus {
	core::StepOutcome outcome;
	TimestampTz at;
	int64 runs;
	int64 errors;
	int32 backoff_level;
	int32 skip_remaining;
};
static_assert(std::is_trivially_destructible_v<TaskStatus>, "lives across PostgreSQL errors");

// Records an outcome of `task` in this database (no-op without shared memory).
void NoteTaskOutcome(core::MaintenanceTask task, core::StepOutcome outcome);
// Records an error of `task` in this database.
void NoteTaskError(core::MaintenanceTask task);
// Records the prune back-off the worker applies to `task`.
void NoteTaskBackoff(core::MaintenanceTask task, int level, int64 skip_remaining);
// Reads the status of `task` in this database; false when none was recorded.
bool ReadTaskStatus(core::MaintenanceTask task, TaskStatus *out);

}  // namespace awa::pg
