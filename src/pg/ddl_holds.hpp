// ddl_holds.hpp: databases that a DDL command of some backend needs without
// other connections (DROP DATABASE, CREATE DATABASE ... TEMPLATE, ALTER
// DATABASE ... RENAME TO / SET TABLESPACE; the ProcessUtility hook of
// database_ddl.hpp takes the hold).
//
// While a hold lasts, the launcher starts no worker in the database and the
// database's worker leaves (its latch is set when the hold is taken). Each
// backend publishes at most one hold, in its own slot of shared memory
// (maintenance_shmem.hpp); it is released when the backend's transaction ends
// (or it exits), and the launcher is then asked to start the database's
// worker again. Without shared_preload_libraries there are no holds (and no
// workers).
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// A DDL command of this backend needs `database`; a second hold replaces the
// first.
void HoldDatabaseForDdl(Oid database);
// Releases this backend's hold, if any (transaction end, exit).
void ReleaseDatabaseHold();
// True while a backend holds `database` for a DDL command.
bool DatabaseHeldForDdl(Oid database);
// The databases held now (at most `capacity`, a database may repeat).
int DatabasesHeldForDdl(Oid *out, int capacity);

// The transaction callback (callbacks.cpp, while preloaded): the DDL command
// that held a database has ended with its transaction.
void OnDdlHoldTransactionEvent(XactEvent event);

}  // namespace awa::pg
