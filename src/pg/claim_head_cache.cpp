// claim_head_cache.cpp: see claim_head_cache.hpp.
#include "pg/claim_head_cache.hpp"

#include "pg/rings.hpp"

#include <type_traits>

extern "C" {
#include "access/htup_details.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/syscache.h"
}

namespace awa::pg {

namespace {

constexpr int kHeadCacheSize = 16384;  // a keyed queue cycles through its keys' lanes

struct HeadCacheEntry {
	Oid incarnation;
	int64 lane_id;
	int64 cursor;
	int64 generation;
};
static_assert(std::is_trivially_destructible_v<HeadCacheEntry>, "lives across PostgreSQL errors");

HeadCacheEntry head_cache[kHeadCacheSize];

// The shared floors: one entry per lane hash, for every backend (a floor
// learnt by one claimer serves the first walk of another: without it, a new
// backend's first claim on a lane read every live generation, and waited for
// any prune's ACCESS EXCLUSIVE section on the oldest). 8,192 entries of 40
// bytes; a lane whose entry another lane took falls back to this backend's
// own entry or the oldest live generation, as before. Keyed by the database
// and its incarnation too: the xmin of its pg_database row, which a database
// dropped and created again with the same OID (CREATE DATABASE ... OID) from
// the same template (so the same extension objects and lane ids) does not
// share (found in review). An ALTER DATABASE that rewrites the row only makes
// the backends that read it before and after miss each other's entries.
constexpr int kSharedHeadEntries = 8192;

struct SharedHeadEntry {
	slock_t mutex;
	Oid database;
	TransactionId database_xmin;
	Oid incarnation;
	int64 lane_id;
	int64 cursor;
	int64 generation;
};
static_assert(std::is_trivially_destructible_v<SharedHeadEntry>, "lives in shared memory");

SharedHeadEntry *shared_floors = NULL;

Size
SharedSize()
{
	return mul_size(sizeof(SharedHeadEntry), kSharedHeadEntries);
}

// This backend's database's incarnation (the xmin of its pg_database row),
// read once.
TransactionId
DatabaseXmin()
{
	static TransactionId xmin = InvalidTransactionId;
	if (!TransactionIdIsValid(xmin)) {
		HeapTuple tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "awa: database %u has no catalog row", MyDatabaseId);
		xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);
		ReleaseSysCache(tuple);
	}
	return xmin;
}

SharedHeadEntry *
SharedEntryOf(int64 lane_id)
{
	if (shared_floors == NULL)
		return NULL;
	uint64 key = static_cast<uint64>(lane_id) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64>(MyDatabaseId);
	return &shared_floors[key % kSharedHeadEntries];
}

}  // namespace

void
RequestHeadFloorsShmem()
{
	RequestAddinShmemSpace(SharedSize());
}

void
StartupHeadFloorsShmem()
{
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bool found;
	shared_floors = static_cast<SharedHeadEntry *>(ShmemInitStruct("awa head floors", SharedSize(), &found));
	if (!found) {
		for (int i = 0; i < kSharedHeadEntries; i++) {
			SpinLockInit(&shared_floors[i].mutex);
			shared_floors[i].database = InvalidOid;
			shared_floors[i].database_xmin = InvalidTransactionId;
			shared_floors[i].incarnation = InvalidOid;
			shared_floors[i].lane_id = 0;
			shared_floors[i].cursor = 0;
			shared_floors[i].generation = -1;
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

int64
HeadGenerationFloor(int64 lane_id, int64 cursor, int64 fallback)
{
	Oid incarnation = ExtensionIncarnation();
	int64 floor = fallback;
	const HeadCacheEntry &entry = head_cache[static_cast<uint64>(lane_id) % kHeadCacheSize];
	if (entry.lane_id == lane_id && entry.incarnation == incarnation && cursor >= entry.cursor)
		floor = Max(floor, entry.generation);
	if (SharedHeadEntry *shared = SharedEntryOf(lane_id)) {
		TransactionId database_xmin = DatabaseXmin();
		SpinLockAcquire(&shared->mutex);
		bool valid = shared->lane_id == lane_id && shared->database == MyDatabaseId &&
		             shared->database_xmin == database_xmin && shared->incarnation == incarnation &&
		             cursor >= shared->cursor;
		int64 generation = shared->generation;
		SpinLockRelease(&shared->mutex);
		if (valid)
			floor = Max(floor, generation);
	}
	return floor;
}

void
RememberHeadGenerationFloor(int64 lane_id, int64 cursor, int64 generation)
{
	if (generation < 0)
		return;
	head_cache[static_cast<uint64>(lane_id) % kHeadCacheSize] =
	    HeadCacheEntry{ExtensionIncarnation(), lane_id, cursor, generation};
}

void
ShareHeadGenerationFloor(int64 lane_id, int64 cursor, int64 generation)
{
	if (generation < 0)
		return;
	SharedHeadEntry *shared = SharedEntryOf(lane_id);
	if (shared == NULL)
		return;
	Oid incarnation = ExtensionIncarnation();
	TransactionId database_xmin = DatabaseXmin();
	SpinLockAcquire(&shared->mutex);
	bool same_lane = shared->lane_id == lane_id && shared->database == MyDatabaseId &&
	                 shared->database_xmin == database_xmin && shared->incarnation == incarnation;
	// For the same lane a floor no higher than the one kept replaces it only
	// when it holds from a lower cursor (it serves more claimers).
	if (!same_lane || generation > shared->generation ||
	    (generation == shared->generation && cursor < shared->cursor)) {
		shared->database = MyDatabaseId;
		shared->database_xmin = database_xmin;
		shared->incarnation = incarnation;
		shared->lane_id = lane_id;
		shared->cursor = cursor;
		shared->generation = generation;
	}
	SpinLockRelease(&shared->mutex);
}

}  // namespace awa::pg
