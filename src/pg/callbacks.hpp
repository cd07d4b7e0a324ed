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

// Whether this transaction entered awa's code: set by every entry that can
// leave transaction-local or shared state behind for the callbacks (each
// AWA_FUNCTION, the ProcessUtility hook's DDL hold), cleared after the
// top-level end's callbacks. A transaction that never entered awa runs none
// of the modules' callbacks: one load of this flag instead of some fifteen
// calls into modules whose state, cold after a commit's flush wait, cost a
// transaction that never calls awa about 2 % of its CPU (perf, a SKIP LOCKED
// insert per transaction beside preloaded awa; bench/peers/RESULTS.md).
extern bool transaction_entered_awa;

inline void
NoteAwaEntered()
{
	transaction_entered_awa = true;
}

// awa's own background workers (the launcher, the maintenance workers) run
// every callback in every transaction: their loops call awa's code directly.
void DispatchEveryTransaction();

}  // namespace awa::pg
