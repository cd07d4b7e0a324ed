// maintenance_shmem.hpp: the layout of maintenance's shared memory, which the
// maintenance files share (and only they include this header):
//
//  * ring_epoch.cpp owns the epoch word, server_run_key.cpp the run nonce;
//  * each backend (by pgprocno) has a slot that it alone writes: the queue-ring
//    generation its enqueue publishes (enqueue_generations.cpp) and the
//    database a DDL command of it holds (ddl_holds.cpp);
//  * per database, under one LWLock: the maintenance worker's pid
//    (worker_registry.cpp) and the last outcome of every task
//    (task_status.cpp); the launcher's pgprocno (worker_registry.cpp); and,
//    as atomics, which queue-ring generations of this server run enqueues
//    and claims wrote into (enqueue_generations.cpp);
//  * per backend slot, its newest committed ring truncation
//    (ring_truncations.cpp).
//
// One allocation ("awa maintenance") and one LWLock tranche
// ("awa_maintenance"), requested and set up by callbacks.cpp at startup.
// Without shared_preload_libraries `shared` stays NULL and each file behaves
// as its header says.
#pragma once

#include "core/maintenance_schedule.hpp"
#include "pg/postgres_headers.hpp"
#include "pg/task_status.hpp"

extern "C" {
#include "port/atomics.h"
#include "storage/lwlock.h"
}

namespace awa::pg::maintenance_shmem {

// Databases whose status is kept at once. An entry without a live worker is
// evicted (least recently used first) when a new database needs one, and a
// worker leaving a database whose extension was dropped frees its entry.
constexpr int kMaxDatabases = 256;

struct DatabaseStatus {
	Oid database;
	TimestampTz last_used;
	int worker_pid;
	bool stopped;  // the worker exited; the launcher restarts it
	TaskStatus tasks[core::kMaintenanceTaskCount];
	// The first queue-ring generation a rotation entered since this entry
	// was made, the newest one an enqueue published, and the newest one a
	// claim wrote its evidence into, each plus one (0: none). Set with a
	// compare-and-swap, read without the lock by the entry's own database
	// (enqueue_generations.cpp).
	pg_atomic_uint64 queue_first_entered_plus_one;
	pg_atomic_uint64 queue_written_plus_one;
	pg_atomic_uint64 queue_claimed_plus_one;
};

// What one backend (by pgprocno) publishes to the others.
struct BackendSlot {
	pg_atomic_uint64 generation_plus_one;  // 0: none published
	Oid database;
	// A DDL command of this backend needs this database without other
	// connections (DROP DATABASE, CREATE DATABASE ... TEMPLATE, ...):
	// InvalidOid when none. Written only by the owner.
	Oid held_database;
	// The newest committed ring truncation of this slot's backends, in any
	// database (a FullTransactionId; 0: none): written at commit by the
	// owner, kept when it exits (ring_truncations.cpp).
	pg_atomic_uint64 truncation_xid;
};

struct Shared {
	// The ring epoch's seqlock word (ring_epoch.cpp).
	pg_atomic_uint64 epoch_word;
	// Drawn when the shared memory is made: at every start and every crash
	// restart (ServerRunKey).
	uint64 run_nonce;
	// When this run became a primary: the first start of the launcher after
	// the shared memory was made (it starts once recovery has finished: at
	// a start, after crash recovery, or at a standby's promotion); 0 before
	// (PrimaryRunSince, server_run_key.hpp).
	pg_atomic_uint64 primary_since;
	// Bumped whenever an entry of databases[] is made or emptied
	// (ClearStatus): a backend that found no entry for its database need not
	// look again until it moves (enqueue_generations.cpp).
	pg_atomic_uint64 status_changes;
	int launcher_pgprocno;  // -1: no launcher
	int backend_slot_count;
	DatabaseStatus databases[kMaxDatabases];
	BackendSlot backends[FLEXIBLE_ARRAY_MEMBER];
};

// NULL without shared_preload_libraries.
extern Shared *shared;
// Guards databases[] and launcher_pgprocno.
extern LWLock *status_lock;

// This backend's slot; NULL without shared memory.
BackendSlot *MySlot();

// The status entry of `database` (caller holds status_lock, exclusively when
// `create`). Creating may evict the least recently used entry that has no
// worker; NULL when every entry has one.
DatabaseStatus *StatusOf(Oid database, bool create);

// Empties an entry (caller holds status_lock exclusively): every field
// zero, its atomics initialised again.
void ClearStatus(DatabaseStatus *entry);

// Registers, once per backend, the exit callback that ends what this backend
// still publishes: its rotation (ring epoch), its enqueue generation and its
// DDL hold. Called by whatever publishes first.
void CleanUpAtExit();

}  // namespace awa::pg::maintenance_shmem

namespace awa::pg {

// The startup hooks (callbacks.cpp), while preloading.
void RequestMaintenanceShmem();
void StartupMaintenanceShmem();

}  // namespace awa::pg
