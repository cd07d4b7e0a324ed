// ring_epoch.cpp: see ring_epoch.hpp.
#include "pg/ring_epoch.hpp"

#include "pg/maintenance_shmem.hpp"

namespace awa::pg {

namespace {

using maintenance_shmem::shared;

// Epoch word: high 16 bits count rotation transactions in flight, low 48 bits
// count finished ones. The epoch is version * 2 + (in flight ? 1 : 0).
constexpr uint64 kInFlightUnit = uint64{1} << 48;
constexpr uint64 kVersionMask = kInFlightUnit - 1;

// Rotation transactions this backend has in flight (0 or 1).
bool rotation_in_flight = false;
// This transaction began a rotation (also without shared memory), in
// rotation_subtransaction or a child of it (the outermost, when several). A
// rotation whose subtransaction rolled back appended nothing: the flag goes
// with it (found in review: enqueue; SAVEPOINT; run_maintenance('rotate');
// ROLLBACK TO; COMMIT refused the commit-time write of the jobs). The epoch
// stays odd until the transaction ends, which only makes enqueues re-read.
bool rotated_in_transaction = false;
SubTransactionId rotation_subtransaction = InvalidSubTransactionId;

void
NoteRotationBegun()
{
	SubTransactionId current = GetCurrentSubTransactionId();
	if (!rotated_in_transaction || current < rotation_subtransaction)
		rotation_subtransaction = current;
	rotated_in_transaction = true;
}

void
EndRotation()
{
	rotated_in_transaction = false;
	if (!rotation_in_flight)
		return;
	rotation_in_flight = false;
	// One atomic step: one fewer in flight, one more finished.
	pg_atomic_fetch_add_u64(&shared->epoch_word, 1 - kInFlightUnit);
}

}  // namespace

int64
SharedRingEpoch()
{
	if (shared == NULL)
		return 1;
	pg_memory_barrier();
	uint64 word = pg_atomic_read_u64(&shared->epoch_word);
	pg_memory_barrier();
	int64 version = static_cast<int64>(word & kVersionMask);
	return version * 2 + ((word >> 48) != 0 ? 1 : 0);
}

bool
RotationInThisTransaction()
{
	return rotated_in_transaction;
}

void
BeginRotation()
{
	if (shared == NULL) {
		// Not preloaded: no epoch to keep, but the flag must still end with
		// the transaction (callbacks.cpp calls OnRingEpochTransactionEvent
		// with or without the preload).
		NoteRotationBegun();
		return;
	}
	NoteRotationBegun();
	if (rotation_in_flight)
		return;
	maintenance_shmem::CleanUpAtExit();
	rotation_in_flight = true;
	pg_atomic_fetch_add_u64(&shared->epoch_word, kInFlightUnit);
}

void
OnRingEpochSubTransactionEvent(SubXactEvent event, SubTransactionId subtransaction, SubTransactionId parent)
{
	if (!rotated_in_transaction)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB && rotation_subtransaction >= subtransaction)
		rotated_in_transaction = false;
	else if (event == SUBXACT_EVENT_COMMIT_SUB && rotation_subtransaction == subtransaction)
		rotation_subtransaction = parent;
}

void
OnRingEpochTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_PREPARE:
		EndRotation();
		break;
	case XACT_EVENT_PRE_PREPARE:
		if (rotation_in_flight)
			ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			                errmsg("awa: a transaction that rotated a ring cannot be prepared"),
			                errhint("Run awa.run_maintenance in a transaction that is not prepared.")));
		break;
	default:
		break;
	}
}

void
EndRotationAtExit()
{
	if (rotation_in_flight)
		EndRotation();
}

}  // namespace awa::pg
