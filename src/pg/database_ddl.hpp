// database_ddl.hpp: DDL commands that need a database without other
// connections work as on a server without awa.
//
// DROP DATABASE, CREATE DATABASE ... TEMPLATE, ALTER DATABASE ... RENAME TO
// and ALTER DATABASE ... SET TABLESPACE fail with "being accessed by other
// users" while any session is connected to the database, and awa's
// maintenance worker is one. A ProcessUtility hook (as extensions with
// per-database workers do) holds the database for the command
// (ddl_holds.hpp): the worker leaves at once, the launcher starts
// none there until the command's transaction has ended, and PostgreSQL's own wait for
// other sessions to go (up to 5 s) sees it gone. The worker is started
// again when the command ends, if the database is still there.
#pragma once

namespace awa::pg {

// From _PG_init while preloading (without the preload no worker runs).
void InstallDatabaseDdlHook();

}  // namespace awa::pg
