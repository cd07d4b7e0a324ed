// worker_registry.hpp: which process is the maintenance worker of each
// database, and the launcher that starts them (maintenance_worker.cpp).
//
// Per database, in shared memory (maintenance_shmem.hpp): the worker's pid
// and whether it stopped since the launcher last looked; one launcher
// pgprocno for the whole server. A claim ends when its process exits (an
// exit callback), and the launcher's latch is set so that it restarts the
// worker. Without shared_preload_libraries no worker runs and nothing is
// registered.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// Makes the calling process the maintenance worker of this database (false:
// another one is alive, or the table of databases is full); the claim ends
// when the process exits.
bool ClaimDatabaseWorker();
// Frees this database's status entry (its extension was dropped).
void ForgetDatabase();
// Frees the entries (without a worker) of databases not in the list (dropped);
// the list is sorted (by OID, ascending).
void ForgetDatabasesExcept(const Oid *databases, int count);
// The pid of this database's maintenance worker, 0 when none.
int DatabaseWorkerPid();
// Whether a maintenance worker has claimed `database` (the launcher: a worker
// it started there found awa and serves it).
bool DatabaseHasWorker(Oid database);

// The launcher registers itself; WakeLauncher asks it to (re)start workers now.
void RegisterLauncher();
void WakeLauncher();
// The same for `database`: a worker is started there at once if it has none.
void WakeLauncherFor(Oid database);
// The same once this transaction commits (a worker started earlier would not
// see what this transaction created).
void WakeLauncherAtCommit();
// Databases whose worker stopped since the launcher last looked: the launcher
// restarts them. Returns the number written into `out` (at most `capacity`).
int TakeStoppedWorkers(Oid *out, int capacity);

// The transaction callback (callbacks.cpp, while preloaded): a commit wakes
// the launcher if WakeLauncherAtCommit asked for it.
void OnWorkerRegistryTransactionEvent(XactEvent event);

}  // namespace awa::pg
