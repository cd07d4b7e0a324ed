// counters.hpp: per-queue job counts in shared memory, so awa.queue_counts
// costs the same at ten jobs and at ten million.
//
// Every operation that moves jobs between states records the move in
// transaction-local memory (CountMove). The moves of a subtransaction that
// aborts are dropped; at commit they are applied to the shared counters, after
// the commit is visible; an aborted transaction applies nothing. A transaction
// with pending moves cannot be prepared. A transaction that moves jobs of more
// queues than its local table holds (64, per subtransaction level) makes the
// database's counters untrusted at its commit, so they are rebuilt.
//
// The counters live in a dynamic shared memory area keyed by (database, hash
// of the queue name), so they grow with the queues up to awa.max_queues, for
// at most awa.max_counted_databases databases at once. A queue's entry is
// made at the PRE_COMMIT of the first transaction that moves its jobs (until
// then its pending moves keep the name), so a move that rolls back takes no
// entry; and a database holds at most awa.max_queues_per_database entries, so
// that one database cannot take the table from the others: a database that
// finds no entry for a queue (its share, or the whole table, is full) is
// counted exactly from then on, alone.
//
// The counters are trusted only once built: after a server start (and after
// the extension is created again) the first awa.queue_counts, or the
// maintenance worker's counters task (awa._ensure_counters), rebuilds them
// with one exact pass (awa._queue_counts_scan) under a snapshot it publishes
// in shared memory. Transactions that commit while the pass runs add their
// moves on top of it exactly when their xid is not visible to that snapshot,
// so no move is lost or counted twice. Until then, on a standby (where
// replayed changes move no counter), without shared_preload_libraries, for a
// database beyond awa.max_counted_databases, or when a queue of the database
// found no entry (more queues than awa.max_queues_per_database, or than
// awa.max_queues in all databases, or two queue names share a hash),
// awa.queue_counts answers from the exact pass.
#pragma once

#include "core/lifecycle.hpp"
#include "pg/postgres_headers.hpp"
#include <type_traits>

namespace awa::pg {

struct QueueCounts {
	int64 count[core::kJobStateCount];
};
static_assert(std::is_trivially_destructible_v<QueueCounts>, "lives across PostgreSQL errors");

// The startup hooks and the (sub)transaction callbacks, called by
// callbacks.cpp while preloaded: PRE_COMMIT makes the entries of the queues
// that have none yet (it may ereport: out of memory) and notes the xid,
// COMMIT applies the pending moves, an abort (of the transaction or of a
// subtransaction) drops its own, a subtransaction's commit folds its moves
// into its parent's, PRE_PREPARE refuses a transaction with pending moves.
void RequestCountersShmem();
void StartupCountersShmem();
void OnCountersTransactionEvent(XactEvent event);
void OnCountersSubTransactionEvent(SubXactEvent event);

// Records that `n` jobs of `queue` left `from` and entered `to` (either may be
// kNoState). Call in the transaction that makes the change. May ereport.
// Takes no shared entry (see above).
// The move also counts as the event core::EventOfMove names, or as `event`
// when given (a rescue): the totals since the server started, which
// awa.job_event_totals reads. Like the counts, they change at commit only.
constexpr int kNoState = core::kNoJobState;
void CountMove(text *queue, int from, int to, int64 n, core::JobEvent event = core::JobEvent::kNone);

// The event totals of every queue of this database that has counters: sets
// *out to a palloc'd array, in no particular order, and returns its length
// (0, *out NULL, without shared memory or for a database without counters).
// May ereport (out of memory).
struct QueueEventTotals {
	char *queue;  // palloc'd
	int64 totals[core::kJobEventCount];
};
int ReadEventTotals(QueueEventTotals **out);

// Makes the counters of this database trustworthy, rebuilding them if needed
// (a rebuild outside a transaction that has written first waits for the ring
// maintenance lock, so that it does not overlap a prune). False when they
// cannot be (see above), or not now (this transaction has written, another
// rebuild is running): the caller counts exactly. Requires SPI. May ereport.
bool EnsureCountersTrusted();

// Marks this database's counters untrusted (unless a live rebuild is running)
// and rebuilds them (awa.rebuild_counters); true when they are trusted
// afterwards. Requires SPI. May ereport (no shared memory, recovery, a
// transaction that has written).
bool RebuildCounters();

// The queue's counters, including this transaction's own pending moves; false
// when the counters are not trusted.
bool ReadCounters(text *queue, QueueCounts *out);

}  // namespace awa::pg
