// inflight.cpp: the in-flight claim registry (see inflight.hpp).
#include "pg/inflight.hpp"

#include "pg/wakeups.hpp"

#include <type_traits>

extern "C" {
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
}

extern "C" {
extern int awa_max_lanes;
}

namespace awa::pg {

namespace {

struct InflightKey {
	Oid database;
	int32 padding;
	int64 lane_id;
};

struct InflightRange {
	int64 first;
	int64 next;
	int owner;  // pgprocno of the claiming backend
	TransactionId xid;  // its top transaction (cancel waits for it)
};

struct LaneInflight {
	InflightKey key;
	slock_t mutex;
	int count;
	// Every lane_seq from the lane's claim cursor up to `frontier` is spent
	// (visible evidence or tombstone) or held by a range registered here
	// (inflight.hpp, InflightFrontier); 0 when none is known. It lives and
	// dies with the entry, which lives while a range is registered.
	int64 frontier;
	InflightRange ranges[kMaxInflightPerLane];
};

// Bumped by every abort that forgets a range, before the range goes: a
// frontier computed from a registry read made before it may count the
// aborted range as held, and is not recorded (RaiseInflightFrontier).
struct InflightShared {
	pg_atomic_uint64 abort_epoch;
};
InflightShared *shared_state = NULL;

// This backend's registrations in the current transaction.
constexpr int kMaxLocal = 256;
struct LocalRegistration {
	InflightKey key;
	int64 first;
	int nest_level;        // the (sub)transaction that registered it
	uint32 wake_bucket;    // the queue's waiters, woken when it is forgotten on abort
};
static_assert(std::is_trivially_destructible_v<LocalRegistration>, "lives across PostgreSQL errors");
LocalRegistration local[kMaxLocal];
int local_count = 0;

HTAB *lanes = NULL;
LWLock *lanes_lock = NULL;

}  // namespace

void
RequestInflightShmem()
{
	RequestAddinShmemSpace(hash_estimate_size(awa_max_lanes, sizeof(LaneInflight)));
	RequestAddinShmemSpace(MAXALIGN(sizeof(InflightShared)));
	RequestNamedLWLockTranche("awa_inflight", 1);
}

void
StartupInflightShmem()
{
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	HASHCTL info;
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(InflightKey);
	info.entrysize = sizeof(LaneInflight);
	lanes = ShmemInitHash("awa in-flight claims", awa_max_lanes, awa_max_lanes, &info,
	                      HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	lanes_lock = &(GetNamedLWLockTranche("awa_inflight"))->lock;
	bool found;
	shared_state = static_cast<InflightShared *>(ShmemInitStruct("awa in-flight state", sizeof(InflightShared), &found));
	if (!found)
		pg_atomic_init_u64(&shared_state->abort_epoch, 0);
	LWLockRelease(AddinShmemInitLock);
}

namespace {

InflightKey
KeyOf(int64 lane_id)
{
	InflightKey key;
	memset(&key, 0, sizeof(key));
	key.database = MyDatabaseId;
	key.lane_id = lane_id;
	return key;
}

// The lane's entry, the caller holding lanes_lock (shared or exclusive); NULL
// when there is none. Entries live only while they hold ranges: the last
// range's owner removes the entry under the exclusive lock, so a pointer is
// valid only while lanes_lock is held.
LaneInflight *
FindEntryLocked(int64 lane_id)
{
	InflightKey key = KeyOf(lane_id);
	return static_cast<LaneInflight *>(hash_search(lanes, &key, HASH_FIND, NULL));
}

// Removes the lane's entry if it holds no range (exclusive lock taken here).
void
RemoveIfEmpty(const InflightKey &key)
{
	LWLockAcquire(lanes_lock, LW_EXCLUSIVE);
	LaneInflight *entry = static_cast<LaneInflight *>(hash_search(lanes, &key, HASH_FIND, NULL));
	if (entry != NULL && entry->count == 0)
		(void)hash_search(lanes, &key, HASH_REMOVE, NULL);
	LWLockRelease(lanes_lock);
}

void
Unregister(const LocalRegistration &registration, bool aborted)
{
	int me = MyProc->pgprocno;
	bool empty = false;
	// An aborted range's lanes are claimable again: no frontier may pass
	// them. Under the entry's spinlock, in one step as InflightRanges sees
	// it: the epoch moves, the frontier comes back below the range, the range
	// goes. A walk that copied the range read the epoch before this step, so
	// its raise either comes before it (and is lowered here) or after it
	// (and sees the new epoch); one that read the registry after it does not
	// hold the range. (The epoch moved before the spinlock once: a walk could
	// read the new epoch, then copy the range before it went, and raise the
	// frontier past it after the lowering. Found by review.)
	LWLockAcquire(lanes_lock, LW_SHARED);
	LaneInflight *entry = static_cast<LaneInflight *>(hash_search(lanes, &registration.key, HASH_FIND, NULL));
	if (entry == NULL && aborted)
		pg_atomic_fetch_add_u64(&shared_state->abort_epoch, 1);
	if (entry != NULL) {
		SpinLockAcquire(&entry->mutex);
		if (aborted) {
			pg_atomic_fetch_add_u64(&shared_state->abort_epoch, 1);
			entry->frontier = Min(entry->frontier, registration.first - 1);
		}
		for (int r = 0; r < entry->count; r++) {
			if (entry->ranges[r].owner == me && entry->ranges[r].first == registration.first) {
				entry->ranges[r] = entry->ranges[entry->count - 1];
				entry->count--;
				break;
			}
		}
		empty = entry->count == 0;
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(lanes_lock);
	if (empty)
		RemoveIfEmpty(registration.key);
}

// Removes the ranges registered at `nest_level` or deeper. Runs in commit and
// abort callbacks: plain code that cannot fail. After an abort the claimed
// jobs are claimable again, so the queue's waiting claims are woken, once the
// ranges are gone.
void
ForgetLocal(int nest_level, bool aborted)
{
	int kept = 0;
	for (int i = 0; i < local_count; i++) {
		if (local[i].nest_level < nest_level) {
			local[kept++] = local[i];
			continue;
		}
		Unregister(local[i], aborted);
		if (aborted)
			WakeQueueBucket(local[i].wake_bucket);
	}
	local_count = kept;
}

}  // namespace

void
OnInflightSubTransactionEvent(SubXactEvent event)
{
	int level = GetCurrentTransactionNestLevel();
	switch (event) {
	case SUBXACT_EVENT_ABORT_SUB:
		ForgetLocal(level, true);
		break;
	case SUBXACT_EVENT_COMMIT_SUB:
		// The parent now owns them (and forgets them if it aborts).
		for (int i = 0; i < local_count; i++)
			if (local[i].nest_level >= level)
				local[i].nest_level = level - 1;
		break;
	default:
		break;
	}
}

void
OnInflightTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_PARALLEL_COMMIT:
		ForgetLocal(1, false);
		break;
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
		ForgetLocal(1, true);
		break;
	case XACT_EVENT_PRE_PREPARE:
		if (local_count > 0)
			ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			                errmsg("awa: a transaction that claimed jobs cannot be prepared"),
			                errhint("Claim jobs in a transaction of their own.")));
		break;
	default:
		break;
	}
}

int
InflightRanges(int64 lane_id, BridgeRange *out, InflightFrontier *frontier)
{
	if (frontier != NULL)
		*frontier = InflightFrontier{0, 0};
	if (lanes == NULL)
		return 0;
	int me = MyProc->pgprocno;
	int count = 0;
	LWLockAcquire(lanes_lock, LW_SHARED);
	LaneInflight *entry = FindEntryLocked(lane_id);
	if (entry != NULL) {
		SpinLockAcquire(&entry->mutex);
		// With the ranges, under the spinlock Unregister moves it under.
		if (frontier != NULL)
			frontier->abort_epoch = pg_atomic_read_u64(&shared_state->abort_epoch);
		for (int r = 0; r < entry->count; r++) {
			if (entry->ranges[r].owner != me)
				out[count++] = BridgeRange{entry->ranges[r].first, entry->ranges[r].next};
		}
		if (frontier != NULL)
			frontier->position = entry->frontier;
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(lanes_lock);
	return count;
}

void
RaiseInflightFrontier(int64 lane_id, const InflightFrontier &read, int64 position)
{
	if (lanes == NULL || position <= read.position)
		return;
	LWLockAcquire(lanes_lock, LW_SHARED);
	LaneInflight *entry = FindEntryLocked(lane_id);
	if (entry != NULL) {
		SpinLockAcquire(&entry->mutex);
		// Read under the spinlock: an abort's Unregister moves the epoch
		// before it takes this spinlock to lower the frontier, so either this
		// sees the new epoch, or the abort lowers what this writes.
		if (pg_atomic_read_u64(&shared_state->abort_epoch) == read.abort_epoch && position > entry->frontier)
			entry->frontier = position;
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(lanes_lock);
}

TransactionId
InflightHolder(int64 lane_id, int64 lane_seq)
{
	if (lanes == NULL)
		return InvalidTransactionId;
	int me = MyProc->pgprocno;
	TransactionId holder = InvalidTransactionId;
	LWLockAcquire(lanes_lock, LW_SHARED);
	LaneInflight *entry = FindEntryLocked(lane_id);
	if (entry != NULL) {
		SpinLockAcquire(&entry->mutex);
		for (int r = 0; r < entry->count; r++) {
			const InflightRange &range = entry->ranges[r];
			if (range.owner != me && lane_seq >= range.first && lane_seq < range.next) {
				holder = range.xid;
				break;
			}
		}
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(lanes_lock);
	return holder;
}

bool
RegisterInflight(int64 lane_id, const BridgeRange *ranges, int count, uint32 wake_bucket)
{
	if (lanes == NULL || local_count + count > kMaxLocal)
		return false;
	int me = MyProc->pgprocno;
	// The transaction writes anyway; an xid now lets others wait for its end.
	TransactionId xid = GetTopTransactionId();
	InflightKey key = KeyOf(lane_id);
	// The entry is created under the exclusive lock and filled before the
	// lock is released, so no forgetter removes it empty in between.
	LWLockAcquire(lanes_lock, LW_SHARED);
	LaneInflight *entry = FindEntryLocked(lane_id);
	if (entry == NULL) {
		LWLockRelease(lanes_lock);
		LWLockAcquire(lanes_lock, LW_EXCLUSIVE);
		bool found;
		entry = static_cast<LaneInflight *>(hash_search(lanes, &key, HASH_ENTER_NULL, &found));
		if (entry != NULL && !found) {
			SpinLockInit(&entry->mutex);
			entry->count = 0;
			entry->frontier = 0;
		}
	}
	bool registered = false;
	if (entry != NULL) {
		SpinLockAcquire(&entry->mutex);
		if (entry->count + count <= kMaxInflightPerLane) {
			for (int i = 0; i < count; i++)
				entry->ranges[entry->count++] = InflightRange{ranges[i].first, ranges[i].next, me, xid};
			registered = true;
		}
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(lanes_lock);
	if (!registered && entry != NULL)
		RemoveIfEmpty(key);
	int level = GetCurrentTransactionNestLevel();
	if (registered)
		for (int i = 0; i < count; i++)
			local[local_count++] = LocalRegistration{key, ranges[i].first, level, wake_bucket};
	return registered;
}

}  // namespace awa::pg
