// ring_truncations.hpp: which ring truncations a reader's snapshot has seen.
//
// TRUNCATE is not MVCC-safe: a snapshot older than a prune's commit sees the
// pruned slot empty and cannot see the rows the prune carried forward or
// copied to the history ring. A READ COMMITTED reader of the ring tables
// (awa.get_job, awa.list_jobs, awa.queue_counts_exact, awa.bulk_count) locks
// them before its statement's snapshot is taken, so a prune in progress is
// waited for and none starts before the call ends; it releases the locks when
// the call returns, so a session left idle in transaction afterwards holds no
// slot (docs/maintenance.md §3.4). A REPEATABLE READ or SERIALIZABLE reader's
// snapshot is older than its call: releasing the locks would let a prune
// truncate what that snapshot still reads, so each truncating transaction
// publishes its xid at commit, and such a reader is refused (40001) when a
// truncation (of any database: the check is conservative) committed after its
// snapshot. On a standby, where truncations are replayed and not published,
// such a reader keeps its locks to the end of its transaction.
//
// Each backend (by pgprocno) publishes the xid of its newest committed
// truncation in its maintenance slot, kept when the backend exits (a later
// occupant's truncation can only commit later). Without
// shared_preload_libraries nothing is published, and such a reader keeps the
// locks to the end of its transaction, as before.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// This transaction truncates ring slots (the prune, the history step): its
// xid is published when it commits. PREPARE of it is refused.
void NoteRingTruncation();

// Called by the reader after it has locked the ring tables. True: the reader
// may release its locks when its call ends (READ COMMITTED, or a snapshot that
// has seen every truncation). False: it must keep them to the end of its
// transaction (REPEATABLE READ without the shared memory, or on a standby).
// Raises 40001 when a truncation committed after the transaction's snapshot.
bool RingLocksReleasable();

// The transaction callback (callbacks.cpp, with or without the preload).
void OnRingTruncationTransactionEvent(XactEvent event);

}  // namespace awa::pg
