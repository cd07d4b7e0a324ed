// counters.hpp: per-queue job counts in shared memory, so awa.queue_counts
// costs the same at ten jobs and at ten million.
//
// Every operation that moves jobs between states records the move in
// transaction-local memory (CountMove). The moves of a subtransaction that
// aborts are dropped; at commit they are applied to the shared counters, after
// the commit is visible; an aborted transaction applies nothing. A transaction
// with pending moves cannot be prepared.
//
// The counters are trusted only once built: after a server start (and after
// the extension is created again) the first awa.queue_counts rebuilds them
// with one exact pass (awa._queue_counts_scan) under a snapshot it publishes in
// shared memory. Transactions that commit while the pass runs add their moves
// on top of it exactly when their xid is not visible to that snapshot, so no
// move is lost or counted twice. Until then, on a standby (where replayed
// changes move no counter), without shared_preload_libraries, or when more
// queues exist than awa.max_queues, awa.queue_counts answers from the exact pass.
#pragma once

#include "core/lifecycle.hpp"
#include "pg/postgres_headers.hpp"

namespace awa::pg {

struct QueueCounts {
	int64 count[core::kJobStateCount];
};

// From _PG_init while preloading.
void InstallCounters();

// Records that `n` jobs of `queue` left `from` and entered `to` (either may be
// kNoState). Call in the transaction that makes the change. May ereport.
// The move also counts as the event core::EventOfMove names, or as `event`
// when given (a rescue): the totals since the server started, which
// awa.job_event_totals reads. Like the counts, they change at commit only.
constexpr int kNoState = core::kNoJobState;
void CountMove(text *queue, int from, int to, int64 n, core::JobEvent event = core::JobEvent::kNone);

// Every queue of this database with event totals: `visit(name, totals)` with
// totals[core::kJobEventCount], the queues in no particular order. Without
// shared memory, visits none. May ereport (out of memory).
struct QueueEventTotals {
	char *queue;  // palloc'd
	int64 totals[core::kJobEventCount];
};
int ReadEventTotals(QueueEventTotals **out);

// Makes the counters of this database trustworthy, rebuilding them if needed.
// False when they cannot be (see above): the caller counts exactly. Requires
// SPI. May ereport.
bool EnsureCountersTrusted();

// Marks this database's counters untrusted and rebuilds them (awa.rebuild_counters).
// Requires SPI. May ereport (no shared memory, recovery, a transaction that
// has written).
bool RebuildCounters();

// The queue's counters, including this transaction's own pending moves; false
// when the counters are not trusted.
bool ReadCounters(text *queue, QueueCounts *out);

}  // namespace awa::pg
