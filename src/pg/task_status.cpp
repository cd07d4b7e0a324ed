// task_status.cpp: see task_status.hpp.
#include "pg/task_status.hpp"

#include "pg/maintenance_shmem.hpp"

namespace awa::pg {

namespace {

using core::MaintenanceTask;
using maintenance_shmem::DatabaseStatus;
using maintenance_shmem::shared;
using maintenance_shmem::status_lock;
using maintenance_shmem::StatusOf;

// One run of `task` in this database: its outcome (kError for a failed step).
void
RecordRun(MaintenanceTask task, core::StepOutcome outcome, bool failed)
{
	if (shared == NULL)
		return;
	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	DatabaseStatus *status = StatusOf(MyDatabaseId, true);
	if (status != NULL) {
		TaskStatus &t = status->tasks[static_cast<int>(task)];
		t.outcome = outcome;
		t.at = GetCurrentTimestamp();
		t.runs++;
		if (failed)
			t.errors++;
	}
	LWLockRelease(status_lock);
}

}  // namespace

void
NoteTaskOutcome(MaintenanceTask task, core::StepOutcome outcome)
{
	RecordRun(task, outcome, false);
}

void
NoteTaskError(MaintenanceTask task)
{
	RecordRun(task, core::StepOutcome::kError, true);
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

}  // namespace awa::pg
