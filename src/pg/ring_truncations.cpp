// ring_truncations.cpp: see ring_truncations.hpp.
#include "pg/ring_truncations.hpp"

#include "pg/maintenance_shmem.hpp"

extern "C" {
#include "access/transam.h"
#include "access/xlog.h"
}

namespace awa::pg {

namespace {

using maintenance_shmem::BackendSlot;
using maintenance_shmem::MySlot;
using maintenance_shmem::shared;

// The xid of this transaction when it truncated ring slots, else invalid.
FullTransactionId truncation_xid = InvalidFullTransactionId;

// Publishes this transaction's truncation, at its commit: while it still holds
// the slots' ACCESS EXCLUSIVE locks, so a reader that has locked them reads it.
void
PublishTruncation()
{
	BackendSlot *slot = MySlot();
	if (slot == NULL)
		return;
	pg_atomic_write_u64(&slot->truncation_xid, U64FromFullTransactionId(truncation_xid));
}

// True when `xid`'s commit is not seen by `snapshot` (it committed after it).
bool
CommittedAfter(FullTransactionId xid, Snapshot snapshot)
{
	// An xid older than half the xid space is long committed and visible
	// (its 32-bit form could wrap into the snapshot's window).
	FullTransactionId next = ReadNextFullTransactionId();
	if (U64FromFullTransactionId(next) - U64FromFullTransactionId(xid) > (uint64{1} << 31))
		return false;
	return XidInMVCCSnapshot(XidFromFullTransactionId(xid), snapshot);
}

// A truncation that committed after `snapshot`, in any backend slot: true
// when one did. Every database's truncations count (a false 40001 at worst):
// a slot keeps only its newest truncation, and a later occupant of the slot
// may work in another database, so filtering by database would lose an older
// truncation of ours that it overwrote (found in review). Unfiltered, the
// newest one of a slot committed after every earlier one of that slot, so if
// it is visible to the snapshot they all are.
bool
TruncationAfter(Snapshot snapshot)
{
	for (int i = 0; i < shared->backend_slot_count; i++) {
		uint64 xid = pg_atomic_read_u64(&shared->backends[i].truncation_xid);
		if (xid != 0 && CommittedAfter(FullTransactionIdFromU64(xid), snapshot))
			return true;
	}
	return false;
}

}  // namespace

void
NoteRingTruncation()
{
	truncation_xid = GetTopFullTransactionId();
}

bool
RingLocksReleasable()
{
	if (!IsolationUsesXactSnapshot())
		return true;
	// On a standby the truncations are replayed, never published here; the
	// locks kept make a replayed TRUNCATE wait or cancel this transaction
	// (a recovery conflict), as before (found in review).
	if (shared == NULL || RecoveryInProgress())
		return false;
	if (TruncationAfter(GetTransactionSnapshot()))
		ereport(ERROR,
		        (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
		         errmsg("could not serialize access due to a concurrent prune of the job rings"),
		         errdetail("A ring slot was truncated after this transaction's snapshot was taken: the snapshot sees "
		                   "it empty, not where its jobs went."),
		         errhint("Retry the transaction, or read jobs under READ COMMITTED.")));
	return true;
}

void
OnRingTruncationTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_PARALLEL_COMMIT:
		if (FullTransactionIdIsValid(truncation_xid))
			PublishTruncation();
		truncation_xid = InvalidFullTransactionId;
		break;
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PREPARE:
		truncation_xid = InvalidFullTransactionId;
		break;
	case XACT_EVENT_PRE_PREPARE:
		if (FullTransactionIdIsValid(truncation_xid))
			ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			                errmsg("awa: a transaction that pruned a ring cannot be prepared"),
			                errhint("Run awa.run_maintenance in a transaction that is not prepared.")));
		break;
	default:
		break;
	}
}

}  // namespace awa::pg
