// lane_locks.cpp: the locks awa takes itself (see lane_locks.hpp).
#include "pg/lane_locks.hpp"

namespace awa::pg {

namespace {

enum KeySpace : uint16 {
	kLaneClaim = 0x4101,
	kClaimBatch = 0x4104,
	kLaneCreate = 0x4105,
};

LOCKTAG
Tag(KeySpace space, int64 key)
{
	LOCKTAG tag;
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(static_cast<uint64>(key) >> 32),
	                     static_cast<uint32>(key), space);
	return tag;
}

// Runs `acquire` (a lock request that waits) with lock_timeout = timeout_ms in
// an internal subtransaction, catching only lock_not_available; true when it
// was granted. A granted lock moves to the transaction's resource owner.
template <typename Acquire>
bool
AcquireWithin(int timeout_ms, Acquire acquire)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool acquired = false;
	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		int nest_level = NewGUCNestLevel();
		char timeout[32];
		snprintf(timeout, sizeof(timeout), "%d", timeout_ms);
		(void)set_config_option("lock_timeout", timeout, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
		                        false);
		acquire();
		AtEOXact_GUC(true, nest_level);
		acquired = true;
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(context);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(context);
		ErrorData *error = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(context);
		CurrentResourceOwner = owner;
		if (error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(error);
		FreeErrorData(error);
	}
	PG_END_TRY();
	return acquired;
}

}  // namespace

// Lane claim locks belong to the (sub)transaction's resource owner, whichever
// way they were granted, so a lock granted inside AcquireWithin's
// subtransaction is released through the same owner as one granted at once.
bool
TryLockLaneClaim(int64 lane_id)
{
	LOCKTAG tag = Tag(kLaneClaim, lane_id);
	ResourceOwner caller_owner = CurrentResourceOwner;
	CurrentResourceOwner = CurTransactionResourceOwner;
	bool granted = LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
	CurrentResourceOwner = caller_owner;
	return granted;
}

bool
LockLaneClaimWithin(int64 lane_id, int timeout_ms)
{
	if (TryLockLaneClaim(lane_id))
		return true;
	if (timeout_ms <= 0)
		return false;
	return AcquireWithin(timeout_ms, [lane_id]() {
		LOCKTAG tag = Tag(kLaneClaim, lane_id);
		(void)LockAcquire(&tag, ExclusiveLock, false, false);
	});
}

void
LockLaneClaim(int64 lane_id)
{
	LOCKTAG tag = Tag(kLaneClaim, lane_id);
	ResourceOwner caller_owner = CurrentResourceOwner;
	CurrentResourceOwner = CurTransactionResourceOwner;
	(void)LockAcquire(&tag, ExclusiveLock, false, false);
	CurrentResourceOwner = caller_owner;
}

void
UnlockLaneClaim(int64 lane_id)
{
	LOCKTAG tag = Tag(kLaneClaim, lane_id);
	ResourceOwner caller_owner = CurrentResourceOwner;
	CurrentResourceOwner = CurTransactionResourceOwner;
	LockRelease(&tag, ExclusiveLock, false);
	CurrentResourceOwner = caller_owner;
}

bool
LockLaneReservations(Oid enqueue_seq, int timeout_ms)
{
	// A lock granted inside the subtransaction below ends up owned by the
	// transaction's resource owner; take the immediate one there too.
	ResourceOwner caller_owner = CurrentResourceOwner;
	CurrentResourceOwner = CurTransactionResourceOwner;
	bool immediate = ConditionalLockRelationOid(enqueue_seq, ShareLock);
	CurrentResourceOwner = caller_owner;
	if (immediate)
		return true;
	if (timeout_ms <= 0)
		return false;
	return AcquireWithin(timeout_ms, [enqueue_seq]() { LockRelationOid(enqueue_seq, ShareLock); });
}

void
UnlockLaneReservations(Oid enqueue_seq)
{
	ResourceOwner caller_owner = CurrentResourceOwner;
	CurrentResourceOwner = CurTransactionResourceOwner;
	UnlockRelationOid(enqueue_seq, ShareLock);
	CurrentResourceOwner = caller_owner;
}

void
LockClaimBatch(int64 claim_batch_id)
{
	LOCKTAG tag = Tag(kClaimBatch, claim_batch_id);
	(void)LockAcquire(&tag, ExclusiveLock, false, false);
}

bool
TryLockClaimBatch(int64 claim_batch_id)
{
	LOCKTAG tag = Tag(kClaimBatch, claim_batch_id);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

void
LockLaneCreate(uint32 lane_hash)
{
	LOCKTAG tag = Tag(kLaneCreate, lane_hash);
	(void)LockAcquire(&tag, ExclusiveLock, false, false);
}

}  // namespace awa::pg
