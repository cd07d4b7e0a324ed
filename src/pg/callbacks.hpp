// callbacks.hpp: the shared-memory hooks and the (sub)transaction callbacks
// of awa, registered in one place (callbacks.cpp), in one written-down order.
//
// The modules that keep shared memory or transaction-local state expose plain
// functions (RequestXxxShmem, StartupXxxShmem, OnXxxTransactionEvent,
// OnXxxSubTransactionEvent); only callbacks.cpp chains shmem_request_hook and
// shmem_startup_hook and calls RegisterXactCallback and
// RegisterSubXactCallback. Exit callbacks (before_shmem_exit) stay with their
// modules, which register them lazily when they first publish something.
#pragma once

namespace awa::pg {

// From _PG_init. While preloading: chains the shared-memory hooks, and the
// transaction callbacks call every module. Otherwise (the library loaded by a
// backend on first use): only the modules that work without shared memory
// (the planner flags, the ring epoch's per-transaction flag) are called.
void InstallCallbacks(bool preloading);

}  // namespace awa::pg
