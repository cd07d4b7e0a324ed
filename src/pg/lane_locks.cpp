// lane_locks.cpp: the locks awa takes itself (see lane_locks.hpp).
#include "pg/lane_locks.hpp"

#include "pg/lane_cursors.hpp"

#include <type_traits>

extern "C" {
#include "common/hashfn.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
}

namespace awa::pg {

namespace {

enum KeySpace : uint16 {
	kLaneClaim = 0x4101,
	kClaimBatch = 0x4104,
	kLaneCreate = 0x4105,
	kLaneReserve = 0x4106,
	kQueueLimit = 0x4107,
	kWideReserve = 0x4108,
	kLaneReclaim = 0x4109,
	kLaneHold = 0x410A,
};

LOCKTAG
Tag(KeySpace space, int64 key)
{
	LOCKTAG tag;
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(static_cast<uint64>(key) >> 32),
	                     static_cast<uint32>(key), space);
	return tag;
}

// Claimers waiting for a lane sleep on one of these, chosen by (database,
// lane): LockLaneClaimWithin.
constexpr int kLaneWaitBuckets = 1024;
ConditionVariable *lane_waits = NULL;

}  // namespace

void
RequestLaneWaitsShmem()
{
	RequestAddinShmemSpace(sizeof(ConditionVariable) * kLaneWaitBuckets);
}

void
StartupLaneWaitsShmem()
{
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bool found;
	lane_waits = static_cast<ConditionVariable *>(
	    ShmemInitStruct("awa lane waits", sizeof(ConditionVariable) * kLaneWaitBuckets, &found));
	if (!found)
		for (int i = 0; i < kLaneWaitBuckets; i++)
			ConditionVariableInit(&lane_waits[i]);
	LWLockRelease(AddinShmemInitLock);
}

namespace {

ConditionVariable *
LaneWaitOf(int64 lane_id)
{
	uint32 hash = hash_combine(hash_bytes_uint32(static_cast<uint32>(lane_id)),
	                           hash_bytes_uint32(static_cast<uint32>(static_cast<uint64>(lane_id) >> 32)));
	return &lane_waits[hash_combine(hash, MyDatabaseId) % kLaneWaitBuckets];
}

// Runs `acquire` (a lock request that waits) with lock_timeout = timeout_ms in
// an internal subtransaction, catching only lock_not_available; true when it
// was granted. A granted lock moves to the transaction's resource owner.
template <typename Acquire>
bool
AcquireWithin(int timeout_ms, Acquire acquire)
{
	static_assert(std::is_trivially_destructible_v<Acquire>, "lives across PostgreSQL errors");
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
	if (lane_waits == NULL)
		return AcquireWithin(timeout_ms, [lane_id]() {
			LOCKTAG tag = Tag(kLaneClaim, lane_id);
			(void)LockAcquire(&tag, ExclusiveLock, false, false);
		});
	// Not a lock-manager wait: there the lock is granted to the first
	// waiter while it may not be running yet, and with many claimers on few
	// cores the lane then sits idle (a convoy: 64 batch-1 claimers drained
	// 0.96x SKIP LOCKED). Here whoever runs when the lane is released takes
	// it; the releaser wakes one sleeper, and a sleeper looks again at least
	// every millisecond (a lane released by a transaction's end, or a
	// condition variable shared with another lane, wakes nobody).
	ConditionVariable *cv = LaneWaitOf(lane_id);
	TimestampTz until = GetCurrentTimestamp() + int64{timeout_ms} * 1000;
	bool granted = false;
	ConditionVariablePrepareToSleep(cv);
	for (;;) {
		if (TryLockLaneClaim(lane_id)) {
			granted = true;
			break;
		}
		TimestampTz now = GetCurrentTimestamp();
		if (now >= until)
			break;
		long nap = static_cast<long>(Min(int64{1000}, until - now) + 999) / 1000;
		(void)ConditionVariableTimedSleep(cv, nap, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return granted;
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
	if (lane_waits != NULL)
		ConditionVariableSignal(LaneWaitOf(lane_id));
}

namespace {

// How many per-lane locks of one kind the current transaction took (`lxid`
// names it) and whether it holds the lock that stands for every lane instead.
struct BoundedLaneLocks {
	LocalTransactionId lxid;
	int locks;
	bool wide;
};
static_assert(std::is_trivially_destructible_v<BoundedLaneLocks>, "lives across PostgreSQL errors");
BoundedLaneLocks reserve_locks = {InvalidLocalTransactionId, 0, false};
BoundedLaneLocks hold_locks = {InvalidLocalTransactionId, 0, false};

void
AcquireForTopTransaction(const LOCKTAG &tag, LOCKMODE mode, LockAcquireResult *result)
{
	ResourceOwner caller_owner = CurrentResourceOwner;
	CurrentResourceOwner = TopTransactionResourceOwner;
	*result = LockAcquire(&tag, mode, false, false);
	CurrentResourceOwner = caller_owner;
}

// Waits, until `until`, for every transaction other than this one that holds
// `tag` in a mode conflicting with ShareLock to end; false if one is still
// running then.
bool
WaitForHolders(const LOCKTAG &tag, TimestampTz until)
{
	int count = 0;
	VirtualTransactionId *holders = GetLockConflicts(&tag, ShareLock, &count);
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();
		VirtualTransactionId holder = holders[i];
		if (!VirtualTransactionIdIsValid(holder) || VirtualXactLock(holder, false))
			continue;  // ended already
		long remaining = static_cast<long>((until - GetCurrentTimestamp()) / 1000);
		if (remaining <= 0)
			return false;
		if (!AcquireWithin(static_cast<int>(remaining), [holder]() { (void)VirtualXactLock(holder, true); }))
			return false;
	}
	return true;
}

}  // namespace

namespace {

// Takes `lane_tag` in RowExclusiveLock mode for the top transaction, or, once
// the transaction holds kMaxLaneReserveLocks of this kind, `wide_tag`, which
// stands for that lane and every later one (the shared lock table is the
// cluster's: a lock per lane ran it out at ~10,000 lanes, for every database).
void
LockBounded(BoundedLaneLocks *state, const LOCKTAG &lane_tag, const LOCKTAG &wide_tag)
{
	if (MyProc->lxid != state->lxid) {
		state->lxid = MyProc->lxid;
		state->locks = 0;
		state->wide = false;
	}
	if (state->wide)
		return;
	LockAcquireResult result;
	if (state->locks < kMaxLaneReserveLocks) {
		AcquireForTopTransaction(lane_tag, RowExclusiveLock, &result);
		if (result == LOCKACQUIRE_OK)
			state->locks++;
		return;
	}
	if (LockHeldByMe(&lane_tag, RowExclusiveLock))
		return;
	AcquireForTopTransaction(wide_tag, RowExclusiveLock, &result);
	state->wide = true;
}

}  // namespace

void
LockLaneReserve(int64 lane_id)
{
	// Past 16 lanes the wide lock is taken before the lane's cursor is read,
	// as the lane's own lock would have been.
	LockBounded(&reserve_locks, Tag(kLaneReserve, lane_id), Tag(kWideReserve, 0));
}

void
LockLaneHold(int64 lane_id)
{
	// Past 16 lanes, key 0 (no lane has it) stands for every lane.
	LockBounded(&hold_locks, Tag(kLaneHold, lane_id), Tag(kLaneHold, 0));
}

bool
TryLockLaneReclaim()
{
	LOCKTAG tag = Tag(kLaneReclaim, 0);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

namespace {

// The tags a reclaim takes in ShareLock mode, each only if free: the lane's
// and the database's reserve locks, and its and every lane's hold locks.
constexpr int kOutTags = 4;

void
OutTags(int64 lane_id, LOCKTAG tags[kOutTags])
{
	tags[0] = Tag(kLaneReserve, lane_id);
	tags[1] = Tag(kWideReserve, 0);
	tags[2] = Tag(kLaneHold, lane_id);
	tags[3] = Tag(kLaneHold, 0);
}

}  // namespace

bool
TryLockOutLaneReservations(int64 lane_id)
{
	LOCKTAG tags[kOutTags];
	OutTags(lane_id, tags);
	for (int i = 0; i < kOutTags; i++)
		if (LockAcquire(&tags[i], ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL) {
			while (--i >= 0)
				(void)LockRelease(&tags[i], ShareLock, false);
			return false;
		}
	return true;
}

void
UnlockOutLaneReservations(int64 lane_id)
{
	LOCKTAG tags[kOutTags];
	OutTags(lane_id, tags);
	for (int i = 0; i < kOutTags; i++)
		(void)LockRelease(&tags[i], ShareLock, false);
}

bool
ProveLaneReservationsEnded(const Lane &lane, int timeout_ms, int64 *horizon)
{
	// Every reservation up to the value read here was made by a transaction
	// that took the lane reserve lock or the wide reserve lock before it and
	// holds it until it ends, so it is among the holders listed next, or has
	// ended. (Each list is used up before the next is asked for:
	// GetLockConflicts may reuse its array.)
	*horizon = ReadLaneCursors(lane).enqueue;
	TimestampTz until = GetCurrentTimestamp() + int64{timeout_ms} * 1000;
	return WaitForHolders(Tag(kLaneReserve, lane.lane_id), until) && WaitForHolders(Tag(kWideReserve, 0), until);
}

void
LockClaimBatch(int64 claim_batch_id)
{
	LOCKTAG tag = Tag(kClaimBatch, claim_batch_id);
	(void)LockAcquire(&tag, ExclusiveLock, false, false);
}

void
UnlockClaimBatch(int64 claim_batch_id)
{
	LOCKTAG tag = Tag(kClaimBatch, claim_batch_id);
	(void)LockRelease(&tag, ExclusiveLock, false);
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

void
UnlockLaneCreate(uint32 lane_hash)
{
	LOCKTAG tag = Tag(kLaneCreate, lane_hash);
	(void)LockRelease(&tag, ExclusiveLock, false);
}

}  // namespace awa::pg

namespace awa::pg {

namespace {

LOCKTAG
QueueLimitTag(text *queue)
{
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(queue)), VARSIZE_ANY_EXHDR(queue));
	return Tag(kQueueLimit, hash);
}

}  // namespace

void
LockQueueLimit(text *queue)
{
	LOCKTAG tag = QueueLimitTag(queue);
	(void)LockAcquire(&tag, ExclusiveLock, false, false);
}

void
UnlockQueueLimit(text *queue)
{
	LOCKTAG tag = QueueLimitTag(queue);
	(void)LockRelease(&tag, ExclusiveLock, false);
}

bool
QueueLimitHeldByOther(text *queue)
{
	LOCKTAG tag = QueueLimitTag(queue);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	(void)LockRelease(&tag, ExclusiveLock, false);  // the hold just taken (one of ours stays)
	return false;
}

}  // namespace awa::pg
