// ring_epoch.hpp: the ring epoch, a seqlock over the rotation ledgers, and
// the lock that serializes ring maintenance.
//
// A transaction that appends to a ledger calls BeginRotation() first: the
// epoch is odd from then until that transaction has ended (its commit is
// visible by then). An enqueue that reads the same even epoch before and
// after reserving its lane_seqs knows that no rotation committed in between,
// so the ring position it cached for that epoch held at the reservation
// instant (docs/architecture.md §2, rings.hpp). Kept in shared memory
// (maintenance_shmem.hpp), not in a sequence, so that a rotation run inside
// any transaction (awa.run_maintenance) keeps the protocol: the end of the
// transaction, not a later statement, closes the window.
//
// Without shared_preload_libraries the epoch always reads odd (enqueues
// re-read the ledger), and only the per-transaction flag of
// RotationInThisTransaction is kept.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// The transaction-level advisory lock that serializes ring maintenance
// (rotate, prune) per database; awa._try_ring_lock() takes it with
// pg_try_advisory_xact_lock. 0x4157415F52494E47 = "AWA_RING".
constexpr int64 kRingMaintenanceLockKey = INT64CONST(0x4157415F52494E47);

// The ring epoch: odd while any rotation transaction is in flight.
int64 SharedRingEpoch();

// This transaction appends to a rotation ledger; the epoch stays odd until it
// ends. May ereport (PREPARE of such a transaction is refused later).
void BeginRotation();

// True when this transaction has begun a rotation: it must not enqueue, since
// it sees a generation other sessions cannot see yet (maintenance.md §5.3).
bool RotationInThisTransaction();

// The transaction callback (callbacks.cpp, with or without the preload): the
// end of a transaction ends its rotation; PRE_PREPARE refuses one that rotated.
void OnRingEpochTransactionEvent(XactEvent event);
// The subtransaction callback: a rotation begun in a subtransaction that
// rolls back is forgotten by RotationInThisTransaction.
void OnRingEpochSubTransactionEvent(SubXactEvent event, SubTransactionId subtransaction, SubTransactionId parent);

// A backend that exits with a rotation in flight ends it (the exit callback of
// maintenance_shmem.cpp).
void EndRotationAtExit();

}  // namespace awa::pg
