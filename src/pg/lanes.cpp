// lanes.cpp: the lane registry (see lanes.hpp).
#include "pg/lanes.hpp"

#include "pg/lane_locks.hpp"
#include "pg/rings.hpp"
#include "pg/sequences.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "common/hashfn.h"
#include "utils/inval.h"
#include "utils/syscache.h"
}

namespace awa::pg {

namespace {

// Per-backend cache of committed lanes, keyed by (queue, priority). A lane
// never changes once committed; entries are tied to the extension's
// incarnation, and a lane created by the current transaction is not cached
// until a later transaction finds it committed.
constexpr int kLaneCacheSize = 128;
constexpr int kMaxQueueBytes = 800;  // 200 characters of up to 4 bytes
struct LaneCacheEntry {
	Oid incarnation;
	uint32 hash;
	int16 priority;
	int length;
	char queue[kMaxQueueBytes];
	Lane lane;
};
LaneCacheEntry lane_cache[kLaneCacheSize];
TransactionId lanes_created_by = InvalidTransactionId;

uint32
LaneHash(text *queue, int16 priority)
{
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(queue)), VARSIZE_ANY_EXHDR(queue));
	return hash_combine(hash, static_cast<uint32>(priority));
}

bool
CachedLane(Oid incarnation, uint32 hash, text *queue, int16 priority, Lane *lane)
{
	const LaneCacheEntry &entry = lane_cache[hash % kLaneCacheSize];
	int length = VARSIZE_ANY_EXHDR(queue);
	if (entry.incarnation != incarnation || entry.hash != hash || entry.priority != priority ||
	    entry.length != length || memcmp(entry.queue, VARDATA_ANY(queue), length) != 0)
		return false;
	*lane = entry.lane;
	return true;
}

void
CacheLane(Oid incarnation, uint32 hash, text *queue, const Lane &lane)
{
	int length = VARSIZE_ANY_EXHDR(queue);
	if (length > kMaxQueueBytes || LaneCreatedInThisTransaction())
		return;
	LaneCacheEntry &entry = lane_cache[hash % kLaneCacheSize];
	entry.incarnation = incarnation;
	entry.hash = hash;
	entry.priority = lane.priority;
	entry.length = length;
	memcpy(entry.queue, VARDATA_ANY(queue), length);
	entry.lane = lane;
}

// Per-backend cache of the lanes of a queue, for claims. A new lane creates
// two sequences, so its commit sends pg_class invalidations; every pg_class
// invalidation empties this cache, and invalidations are processed at the
// start of each transaction. A claim therefore sees every lane committed
// before its transaction began.
constexpr int kQueueCacheSize = 64;
struct QueueCacheEntry {
	Oid incarnation;
	uint32 hash;
	int length;
	char queue[kMaxQueueBytes];
	int lane_count;
	Lane lanes[kMaxLanesPerQueue];
};
QueueCacheEntry queue_cache[kQueueCacheSize];
bool queue_cache_callback_registered = false;

void
ForgetQueues(Datum, int, uint32)
{
	for (QueueCacheEntry &entry : queue_cache)
		entry.incarnation = InvalidOid;
}

}  // namespace

void
ForgetCachedLanes()
{
	ForgetQueues((Datum)0, 0, 0);
}

namespace {

bool
FindLane(text *queue, int16 priority, bool latest, Lane *lane)
{
	Datum values[2] = {PointerGetDatum(queue), Int16GetDatum(priority)};
	if (latest)
		ExecuteLatest(Stmt::kLaneOf, 0, values, NULL, 1);
	else
		Execute(Stmt::kLaneOf, 0, values, NULL, 1);
	if (SPI_processed == 0)
		return false;
	HeapTuple tuple = SPI_tuptable->vals[0];
	TupleDesc desc = SPI_tuptable->tupdesc;
	bool isnull;
	lane->lane_id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
	lane->priority = priority;
	lane->enqueue_seq = DatumGetObjectId(SPI_getbinval(tuple, desc, 2, &isnull));
	lane->claim_seq = DatumGetObjectId(SPI_getbinval(tuple, desc, 3, &isnull));
	return true;
}

}  // namespace

Lane
EnsureLane(text *queue, int16 priority)
{
	Lane lane;
	Oid incarnation = ExtensionIncarnation();
	uint32 hash = LaneHash(queue, priority);
	if (CachedLane(incarnation, hash, queue, priority, &lane))
		return lane;
	if (FindLane(queue, priority, false, &lane)) {
		CacheLane(incarnation, hash, queue, lane);
		return lane;
	}

	// First use: one creator per lane; a waiter sees the creator's committed row.
	LockLaneCreate(hash);
	if (FindLane(queue, priority, true, &lane))
		return lane;
	lanes_created_by = GetTopTransactionId();

	Oid id_seq = AwaObjectOid(AwaObject::kQueueLaneIdSeq);
	int64 lane_id = SequenceNext(id_seq);
	char sql[1024];
	// The sequences are members of the extension (like queue_lanes, which
	// names them): DROP EXTENSION removes them and pg_dump leaves them out
	// together with the lane rows, so a restored database starts consistent.
	snprintf(sql, sizeof(sql),
	         "CREATE SEQUENCE awa.lane_" INT64_FORMAT "_enqueue_seq AS bigint MINVALUE 0 START 1 "
	         "OWNED BY awa.queue_lanes.lane_id; "
	         "CREATE SEQUENCE awa.lane_" INT64_FORMAT "_claim_seq AS bigint MINVALUE 0 START 1 "
	         "OWNED BY awa.queue_lanes.lane_id; "
	         "ALTER EXTENSION awa ADD SEQUENCE awa.lane_" INT64_FORMAT "_enqueue_seq; "
	         "ALTER EXTENSION awa ADD SEQUENCE awa.lane_" INT64_FORMAT "_claim_seq; "
	         "GRANT SELECT ON SEQUENCE awa.lane_" INT64_FORMAT "_enqueue_seq, awa.lane_" INT64_FORMAT
	         "_claim_seq TO awa_admin",
	         lane_id, lane_id, lane_id, lane_id, lane_id, lane_id);
	ExecuteUtility(sql);

	Datum values[3] = {PointerGetDatum(queue), Int16GetDatum(priority), Int64GetDatum(lane_id)};
	Execute(Stmt::kRegisterLane, 0, values, NULL, 1);
	HeapTuple tuple = SPI_tuptable->vals[0];
	TupleDesc desc = SPI_tuptable->tupdesc;
	bool isnull;
	lane.lane_id = lane_id;
	lane.priority = priority;
	lane.enqueue_seq = DatumGetObjectId(SPI_getbinval(tuple, desc, 1, &isnull));
	lane.claim_seq = DatumGetObjectId(SPI_getbinval(tuple, desc, 2, &isnull));
	return lane;
}

int
LanesOfQueue(text *queue, Lane lanes[kMaxLanesPerQueue])
{
	if (!queue_cache_callback_registered) {
		CacheRegisterSyscacheCallback(RELOID, ForgetQueues, (Datum)0);
		queue_cache_callback_registered = true;
	}
	Oid incarnation = ExtensionIncarnation();
	int length = VARSIZE_ANY_EXHDR(queue);
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(queue)), length);
	QueueCacheEntry &entry = queue_cache[hash % kQueueCacheSize];
	if (entry.incarnation == incarnation && entry.hash == hash && entry.length == length &&
	    memcmp(entry.queue, VARDATA_ANY(queue), length) == 0) {
		memcpy(lanes, entry.lanes, sizeof(Lane) * entry.lane_count);
		return entry.lane_count;
	}

	Datum values[1] = {PointerGetDatum(queue)};
	Execute(Stmt::kLanesOfQueue, 0, values, NULL, kMaxLanesPerQueue);
	int count = static_cast<int>(SPI_processed);
	TupleDesc desc = SPI_tuptable->tupdesc;
	for (int i = 0; i < count; i++) {
		HeapTuple tuple = SPI_tuptable->vals[i];
		bool isnull;
		lanes[i].lane_id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		lanes[i].priority = DatumGetInt16(SPI_getbinval(tuple, desc, 2, &isnull));
		lanes[i].enqueue_seq = DatumGetObjectId(SPI_getbinval(tuple, desc, 3, &isnull));
		lanes[i].claim_seq = DatumGetObjectId(SPI_getbinval(tuple, desc, 4, &isnull));
	}
	if (length <= kMaxQueueBytes && !LaneCreatedInThisTransaction()) {
		entry.incarnation = incarnation;
		entry.hash = hash;
		entry.length = length;
		memcpy(entry.queue, VARDATA_ANY(queue), length);
		entry.lane_count = count;
		memcpy(entry.lanes, lanes, sizeof(Lane) * count);
	}
	return count;
}

// What this transaction sees of the lane registry may still roll back while
// it has created a lane, so neither cache takes it then.
bool
LaneCreatedInThisTransaction()
{
	TransactionId current = GetTopTransactionIdIfAny();
	return TransactionIdIsValid(current) && current == lanes_created_by;
}

}  // namespace awa::pg
