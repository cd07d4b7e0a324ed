// maintenance_state.hpp: the shared memory of maintenance.
//
//  * The ring epoch, a seqlock over the rotation ledgers. A transaction that
//    appends to a ledger calls BeginRotation() first: the epoch is odd from
//    then until that transaction has ended (its commit is visible by then).
//    An enqueue that reads the same even epoch before and after reserving
//    its lane_seqs knows that no rotation committed in between, so the ring
//    position it cached for that epoch held at the reservation instant
//    (docs/architecture.md §2). Kept in shared memory, not in a sequence, so
//    that a rotation run inside any transaction (awa.run_maintenance) keeps
//    the protocol: the end of the transaction, not a later statement, closes
//    the window.
//  * The queue-ring generation each backend's enqueue is about to write to,
//    from before it reserves lane_seqs until its ready rows are inserted (and
//    their child locked). Prune refuses to truncate a generation an enqueue
//    may still write into (docs/maintenance.md, proof (d)).
//  * Per database: the maintenance worker's pid and the last outcome of every
//    task, for awa.storage_status and awa.maintenance_status.
//
// Without shared_preload_libraries none of this exists: the epoch always reads
// odd (enqueues re-read the ledger), nothing is published, and no worker runs.
#pragma once

#include "core/maintenance_schedule.hpp"
#include "pg/postgres_headers.hpp"

namespace awa::pg {

// The transaction-level advisory lock that serializes ring maintenance
// (rotate, prune) per database; awa._try_ring_lock() takes it with
// pg_try_advisory_xact_lock. 0x4157415F52494E47 = "AWA_RING".
constexpr int64 kRingMaintenanceLockKey = INT64CONST(0x4157415F52494E47);

// From _PG_init while preloading.
void InstallMaintenanceState();

// The ring epoch: odd while any rotation transaction is in flight.
int64 SharedRingEpoch();
// A key of this server run, for the claim fence (claim_fence.hpp): it changes
// at every start, crash restart and promotion; in [1, 2^63). 0 without the
// preload or during recovery (it reads the WAL insertion timeline).
uint64 ServerRunKey();
// This transaction appends to a rotation ledger; the epoch stays odd until it
// ends. May ereport (PREPARE of such a transaction is refused later).
void BeginRotation();
// True when this transaction has begun a rotation: it must not enqueue, since
// it sees a generation other sessions cannot see yet (maintenance.md §5.3).
bool RotationInThisTransaction();

// Enqueue publication (per backend, no lock).
void PublishEnqueueGeneration(int64 generation);
void ClearEnqueueGeneration();
// True when a backend of this database published a generation <= `generation`.
bool EnqueueGenerationInUse(int64 generation);

// Task outcomes of this database.
struct TaskStatus {
	char outcome[32];
	TimestampTz at;
	int64 runs;
	int64 errors;
	int32 backoff_level;
	int32 skip_remaining;
};
// Records an outcome of `task` in this database (no-op without shared memory).
void NoteTaskOutcome(core::MaintenanceTask task, const char *outcome);
// Records an error of `task` in this database.
void NoteTaskError(core::MaintenanceTask task);
// Records the prune back-off the worker applies to `task`.
void NoteTaskBackoff(core::MaintenanceTask task, int level, int64 skip_remaining);
// Reads the status of `task` in this database; false when none was recorded.
bool ReadTaskStatus(core::MaintenanceTask task, TaskStatus *out);

// Worker registry. ClaimDatabaseWorker makes the calling process the
// maintenance worker of this database (false: another one is alive, or the
// table of databases is full); the claim ends when the process exits.
bool ClaimDatabaseWorker();
// Frees this database's status entry (its extension was dropped).
void ForgetDatabase();
// Frees the entries (without a worker) of databases not in the list (dropped).
void ForgetDatabasesExcept(const Oid *databases, int count);
// The pid of this database's maintenance worker, 0 when none.
int DatabaseWorkerPid();
// The launcher registers itself; WakeLauncher asks it to (re)start workers now.
void RegisterLauncher();
void WakeLauncher();
// The same for `database`: a worker is started there at once if it has none.
void WakeLauncherFor(Oid database);
// The same once this transaction commits (a worker started earlier would not
// see what this transaction created).
void WakeLauncherAtCommit();
// A DDL command of this backend needs `database` without other connections
// (database_ddl.hpp): while the hold lasts, the launcher starts no worker
// there and the database's worker leaves (its latch is set now). Released
// when this backend's transaction ends (or it exits); one hold per backend,
// a second replaces the first.
void HoldDatabaseForDdl(Oid database);
void ReleaseDatabaseHold();
// True while a backend holds `database` for a DDL command.
bool DatabaseHeldForDdl(Oid database);
// The databases held now (at most `capacity`, a database may repeat).
int DatabasesHeldForDdl(Oid *out, int capacity);
// Databases whose worker stopped since the launcher last looked: the launcher
// restarts them. Returns the number written into `out` (at most `capacity`).
int TakeStoppedWorkers(Oid *out, int capacity);

}  // namespace awa::pg
