// lanes.cpp: the lane registry (see lanes.hpp).
#include "pg/lanes.hpp"

#include "pg/lane_locks.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "common/hashfn.h"
#include "utils/fmgroids.h"
#include "utils/relcache.h"
#include "utils/inval.h"
#include "storage/itemptr.h"
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

// Per-backend cache of the lanes of a queue, for claims. A new lane's
// transaction sends a relcache invalidation of awa.queue_lanes at commit;
// that (like every pg_class invalidation) empties this cache, and
// invalidations are processed at the start of each transaction. A claim
// therefore sees every lane committed before its transaction began.
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
uint64 lane_rows_epoch = 1;
// awa.queue_lanes's OID once known (InvalidOid: every relcache invalidation
// counts as one of it).
Oid known_lanes_relid = InvalidOid;

void
ForgetQueues(Datum, int, uint32)
{
	for (QueueCacheEntry &entry : queue_cache)
		entry.incarnation = InvalidOid;
}

void
ForgetLaneRows(Datum, Oid relid)
{
	if (OidIsValid(relid) && OidIsValid(known_lanes_relid) && relid != known_lanes_relid)
		return;
	lane_rows_epoch++;
	ForgetQueues((Datum)0, 0, 0);
	for (LaneCacheEntry &entry : lane_cache)
		entry.incarnation = InvalidOid;
}

void
RegisterCallbacks()
{
	if (queue_cache_callback_registered)
		return;
	CacheRegisterSyscacheCallback(RELOID, ForgetQueues, (Datum)0);
	CacheRegisterRelcacheCallback(ForgetLaneRows, (Datum)0);
	queue_cache_callback_registered = true;
}

}  // namespace

void
ForgetCachedLanes()
{
	ForgetQueues((Datum)0, 0, 0);
}

uint64
LaneRowsEpoch()
{
	return lane_rows_epoch;
}

Lane
LaneOfRow(HeapTuple tuple, TupleDesc desc)
{
	bool isnull;
	Lane lane;
	lane.row = *reinterpret_cast<ItemPointer>(DatumGetPointer(SPI_getbinval(tuple, desc, 1, &isnull)));
	lane.lane_id = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
	lane.priority = DatumGetInt16(SPI_getbinval(tuple, desc, 3, &isnull));
	lane.rows_epoch = lane_rows_epoch;
	return lane;
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
	*lane = LaneOfRow(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
	return true;
}

// The transaction, other than this one, that inserted the lane's row and is
// still running (InvalidTransactionId: none). A dirty read of the primary key
// on (queue, priority), as a unique check does: the lane create lock is held
// only while a row is inserted, so a row whose creator has not committed yet
// is seen here, not by a snapshot.
TransactionId
LaneCreatorInProgress(text *queue, int16 priority)
{
	Relation rel = table_open(known_lanes_relid, AccessShareLock);
	Oid index = RelationGetPrimaryKeyIndex(rel);
	AttrNumber queue_column = get_attnum(RelationGetRelid(rel), "queue");
	AttrNumber priority_column = get_attnum(RelationGetRelid(rel), "priority");
	if (!OidIsValid(index) || queue_column == InvalidAttrNumber || priority_column == InvalidAttrNumber)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa: awa.queue_lanes has no primary key on (queue, priority)"),
		                errhint("The extension's objects were changed by hand; recreate the extension.")));
	ScanKeyData keys[2];
	ScanKeyEntryInitialize(&keys[0], 0, queue_column, BTEqualStrategyNumber, InvalidOid,
	                       TupleDescAttr(RelationGetDescr(rel), queue_column - 1)->attcollation, F_TEXTEQ,
	                       PointerGetDatum(queue));
	ScanKeyEntryInitialize(&keys[1], 0, priority_column, BTEqualStrategyNumber, InvalidOid, InvalidOid, F_INT2EQ,
	                       Int16GetDatum(priority));
	SnapshotData dirty;
	InitDirtySnapshot(dirty);
	SysScanDesc scan = systable_beginscan(rel, index, true, &dirty, 2, keys);
	TransactionId creator = InvalidTransactionId;
	while (HeapTupleIsValid(systable_getnext(scan))) {
		CHECK_FOR_INTERRUPTS();
		if (TransactionIdIsValid(dirty.xmin)) {
			creator = dirty.xmin;
			break;
		}
	}
	systable_endscan(scan);
	table_close(rel, NoLock);
	return creator;
}

}  // namespace

Lane
EnsureLane(text *queue, int16 priority)
{
	RegisterCallbacks();
	known_lanes_relid = AwaObjectOid(AwaObject::kQueueLanes);
	Lane lane;
	Oid incarnation = ExtensionIncarnation();
	uint32 hash = LaneHash(queue, priority);
	if (CachedLane(incarnation, hash, queue, priority, &lane))
		return lane;
	if (FindLane(queue, priority, false, &lane)) {
		CacheLane(incarnation, hash, queue, lane);
		return lane;
	}

	// First use: one creator per lane at a time, under the lane create lock,
	// which is held only until the row is in: a transaction that creates
	// 20,000 lanes must not hold 20,000 locks of the cluster's shared lock
	// table to its end (test/t/047_lock_table_bounded.pl). A later creator
	// finds the row with a dirty read and waits for its creator's end (as a
	// unique check would, without raising 23505), then sees it committed or
	// gone.
	LockLaneCreate(hash);
	for (;;) {
		CHECK_FOR_INTERRUPTS();
		TransactionId creator = LaneCreatorInProgress(queue, priority);
		if (!TransactionIdIsValid(creator))
			break;
		UnlockLaneCreate(hash);
		XactLockTableWait(creator, NULL, NULL, XLTW_None);
		LockLaneCreate(hash);
	}
	if (FindLane(queue, priority, true, &lane)) {
		UnlockLaneCreate(hash);
		return lane;
	}
	lanes_created_by = GetTopTransactionId();

	Oid id_seq = AwaObjectOid(AwaObject::kQueueLaneIdSeq);
	int64 lane_id = nextval_internal(id_seq, false);
	Datum values[3] = {PointerGetDatum(queue), Int16GetDatum(priority), Int64GetDatum(lane_id)};
	Execute(Stmt::kRegisterLane, 0, values, NULL, 1);
	lane = LaneOfRow(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
	// Other backends' caches of the queue's lanes forget them when this
	// transaction commits (LanesOfQueue); this backend's at once, since no
	// command boundary may come before its next claim reads them (a claim
	// that writes this transaction's pending jobs first, test/t/005).
	UnlockLaneCreate(hash);
	CacheInvalidateRelcacheByRelid(known_lanes_relid);
	ForgetQueues((Datum)0, 0, 0);
	return lane;
}

int
LanesOfQueue(text *queue, Lane lanes[kMaxLanesPerQueue])
{
	RegisterCallbacks();
	known_lanes_relid = AwaObjectOid(AwaObject::kQueueLanes);
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
	for (int i = 0; i < count; i++)
		lanes[i] = LaneOfRow(SPI_tuptable->vals[i], desc);
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
