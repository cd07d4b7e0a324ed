// lanes.cpp: the lane registry (see lanes.hpp).
#include "pg/lanes.hpp"

#include "pg/lane_locks.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "access/genam.h"
#include "access/generic_xlog.h"
#include "access/heapam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type_d.h"
#include "executor/executor.h"
#include "mb/pg_wchar.h"
#include "storage/bufmgr.h"
#include "storage/sinval.h"
#include "storage/standby.h"
#include "utils/timestamp.h"
#include "common/hashfn.h"
#include "utils/fmgroids.h"
#include "utils/relcache.h"
#include "utils/inval.h"
#include "storage/itemptr.h"
#include "utils/syscache.h"
}

namespace awa::pg {

namespace {

// Per-backend cache of lanes, keyed by (queue, priority). A lane's row is
// committed when it is inserted and never changes (its cursors are read from
// the page, not from here); entries are tied to the extension's incarnation.
constexpr int kLaneCacheSize = 128;
constexpr int kMaxQueueBytes = 800;  // 200 characters of up to 4 bytes
constexpr int kMaxKeyBytes = 255;    // core::kMaxConcurrencyKeyBytes
struct LaneCacheEntry {
	Oid incarnation;
	uint32 hash;
	int16 priority;
	int length;
	int key_length;  // -1: the lane of jobs without a key
	char queue[kMaxQueueBytes];
	char key[kMaxKeyBytes];
	Lane lane;
};
LaneCacheEntry lane_cache[kLaneCacheSize];

uint32
LaneHash(text *queue, int16 priority, text *key)
{
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(queue)), VARSIZE_ANY_EXHDR(queue));
	hash = hash_combine(hash, static_cast<uint32>(priority));
	if (key != NULL)
		hash = hash_combine(hash, hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(key)),
		                                   VARSIZE_ANY_EXHDR(key)));
	return hash;
}

bool
CachedLane(Oid incarnation, uint32 hash, text *queue, int16 priority, text *key, Lane *lane)
{
	const LaneCacheEntry &entry = lane_cache[hash % kLaneCacheSize];
	int length = VARSIZE_ANY_EXHDR(queue);
	int key_length = key == NULL ? -1 : static_cast<int>(VARSIZE_ANY_EXHDR(key));
	if (entry.incarnation != incarnation || entry.hash != hash || entry.priority != priority ||
	    entry.length != length || memcmp(entry.queue, VARDATA_ANY(queue), length) != 0 ||
	    entry.key_length != key_length || (key != NULL && memcmp(entry.key, VARDATA_ANY(key), key_length) != 0))
		return false;
	*lane = entry.lane;
	return true;
}

void
CacheLane(Oid incarnation, uint32 hash, text *queue, text *key, const Lane &lane)
{
	int length = VARSIZE_ANY_EXHDR(queue);
	int key_length = key == NULL ? -1 : static_cast<int>(VARSIZE_ANY_EXHDR(key));
	if (length > kMaxQueueBytes || key_length > kMaxKeyBytes)
		return;
	LaneCacheEntry &entry = lane_cache[hash % kLaneCacheSize];
	entry.incarnation = incarnation;
	entry.hash = hash;
	entry.priority = lane.priority;
	entry.length = length;
	memcpy(entry.queue, VARDATA_ANY(queue), length);
	entry.key_length = key_length;
	if (key != NULL)
		memcpy(entry.key, VARDATA_ANY(key), key_length);
	entry.lane = lane;
}

// Per-backend cache of the lanes of a queue, for claims. A new lane's creator
// sends a relcache invalidation of awa.queue_lanes once the row is in
// (AnnounceNewLane); that (like every pg_class invalidation) empties this
// cache, and invalidations are processed at the start of each transaction
// and whenever a relation lock is first taken. A claim therefore sees every
// lane inserted before its transaction began.
constexpr int kQueueCacheSize = 64;
struct QueueCacheEntry {
	Oid incarnation;
	uint32 hash;
	int length;
	char queue[kMaxQueueBytes];
	int lane_count;
	Lane lanes[kMaxLanesPerQueue];
	uint8 keyed;  // KeyedPriorities: bit p-1 for priority p
	bool keyed_known;
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
	lane.keyed = false;
	int keyed_column = SPI_fnumber(desc, "keyed");
	if (keyed_column > 0) {
		Datum keyed = SPI_getbinval(tuple, desc, keyed_column, &isnull);
		lane.keyed = !isnull && DatumGetBool(keyed);
	}
	lane.rows_epoch = lane_rows_epoch;
	return lane;
}



namespace {

bool
FindLane(text *queue, int16 priority, text *key, bool latest, Lane *lane)
{
	Datum values[3] = {PointerGetDatum(queue), Int16GetDatum(priority), PointerGetDatum(key)};
	Stmt stmt = key == NULL ? Stmt::kLaneOf : Stmt::kKeyedLaneOf;
	if (latest)
		ExecuteLatest(stmt, 0, values, NULL, 1);
	else
		Execute(stmt, 0, values, NULL, 1);
	if (SPI_processed == 0)
		return false;
	*lane = LaneOfRow(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
	lane->keyed = key != NULL;
	return true;
}

// Marks the row at `tid`, just inserted by this transaction with its index
// entries, committed for every snapshot (HEAP_XMIN_FROZEN, as COPY FREEZE
// writes rows), as one generic WAL record after the heap and index records. A
// crash before it leaves a row of a transaction that never committed
// (invisible; vacuum removes it), never a visible row that its unique index
// does not know (a second lane of the same identity could then be inserted).
void
FreezeInsertedLaneRow(Relation rel, ItemPointer tid)
{
	Buffer buffer = ReadBuffer(rel, ItemPointerGetBlockNumber(tid));
	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	ItemId item = PageGetItemId(BufferGetPage(buffer), ItemPointerGetOffsetNumber(tid));
	if (!ItemIdIsNormal(item)) {
		UnlockReleaseBuffer(buffer);
		elog(ERROR, "awa: the new lane row is not where it was inserted");
	}
	// Under wal_consistency_checking for generic records a full image, as
	// lane_cursors.cpp writes (readers set hint bits on heap pages without WAL).
	bool checked = wal_consistency_checking != NULL && wal_consistency_checking[RM_GENERIC_ID];
	GenericXLogState *state = GenericXLogStart(rel);
	Page copy = GenericXLogRegisterBuffer(state, buffer, checked ? GENERIC_XLOG_FULL_IMAGE : 0);
	HeapTupleHeader header = reinterpret_cast<HeapTupleHeader>(
	    PageGetItem(copy, PageGetItemId(copy, ItemPointerGetOffsetNumber(tid))));
	HeapTupleHeaderSetXminFrozen(header);
	(void)GenericXLogFinish(state);
	UnlockReleaseBuffer(buffer);
}

// Inserts the lane's row and commits it at once (FreezeInsertedLaneRow): it
// does not roll back with the creating transaction, and no other producer of
// the lane waits for that transaction to end. The row is bookkeeping with
// both cursors at 0; a creator that rolls back leaves the lane empty, as a
// lane whose jobs have all run is (docs/architecture.md, "A lane's row is
// committed when it is inserted"). The heap and index inserts go without
// the executor: awa.queue_lanes has no expression or partial index, a
// trigger is refused (55000), and its CHECK constraints are checked here
// (validate.hpp checked the same bounds at the call). May ereport.
Lane
InsertCommittedLaneRow(text *queue, int16 priority, int64 lane_id, text *key)
{
	Relation rel = table_open(known_lanes_relid, RowExclusiveLock);
	TupleDesc desc = RelationGetDescr(rel);
	static const char *const kColumns[] = {"lane_id",  "enqueue_cursor", "claim_cursor", "enqueue_logged",
	                                       "cursor_run", "priority",     "queue",        "created_at",
	                                       "concurrency_key"};
	static const Oid kTypes[] = {INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT2OID, TEXTOID, TIMESTAMPTZOID, TEXTOID};
	constexpr int kColumnCount = 9;
	if (rel->trigdesc != NULL)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa: awa.queue_lanes has a trigger"),
		                errhint("awa inserts lane rows without the executor, so a trigger there would not fire: "
		                        "drop it.")));
	bool layout = desc->natts == kColumnCount;
	for (int i = 0; layout && i < kColumnCount; i++) {
		Form_pg_attribute column = TupleDescAttr(desc, i);
		layout = !column->attisdropped && column->atttypid == kTypes[i] && strcmp(NameStr(column->attname), kColumns[i]) == 0;
	}
	if (!layout)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("awa: awa.queue_lanes does not have the columns awa writes"),
		                errhint("The extension's objects were changed by hand; recreate the extension.")));
	text *plain_queue = pg_detoast_datum_packed(queue);
	text *plain_key = key == NULL ? NULL : pg_detoast_datum_packed(key);
	int queue_chars = pg_mbstrlen_with_len(VARDATA_ANY(plain_queue), VARSIZE_ANY_EXHDR(plain_queue));
	if (priority < 1 || priority > 4 || queue_chars < 1 || queue_chars > 200 ||
	    (plain_key != NULL && (VARSIZE_ANY_EXHDR(plain_key) < 1 || VARSIZE_ANY_EXHDR(plain_key) > kMaxKeyBytes)))
		ereport(ERROR, (errcode(ERRCODE_CHECK_VIOLATION),
		                errmsg("awa: lane (%d, %d characters of queue) is outside awa.queue_lanes's bounds", priority,
		                       queue_chars)));
	Datum values[kColumnCount] = {Int64GetDatum(lane_id), Int64GetDatum(0),       Int64GetDatum(0),
	                              Int64GetDatum(0),       Int64GetDatum(0),       Int16GetDatum(priority),
	                              PointerGetDatum(queue), TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
	                              PointerGetDatum(key)};
	bool nulls[kColumnCount] = {false, false, false, false, false, false, false, false, key == NULL};
	HeapTuple tuple = heap_form_tuple(desc, values, nulls);
	heap_insert(rel, tuple, GetCurrentCommandId(true), 0, NULL);

	EState *estate = CreateExecutorState();
	ResultRelInfo *result = makeNode(ResultRelInfo);
	InitResultRelInfo(result, rel, 1, NULL, 0);
	ExecOpenIndices(result, false);
	TupleTableSlot *slot = ExecInitExtraTupleSlot(estate, desc, &TTSOpsHeapTuple);
	ExecStoreHeapTuple(tuple, slot, false);
	list_free(ExecInsertIndexTuples(result, slot, estate, false, false, NULL, NIL));
	ExecCloseIndices(result);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	FreezeInsertedLaneRow(rel, &tuple->t_self);

	Lane lane;
	lane.row = tuple->t_self;
	lane.lane_id = lane_id;
	lane.priority = priority;
	lane.keyed = key != NULL;
	lane.rows_epoch = lane_rows_epoch;
	heap_freetuple(tuple);
	table_close(rel, NoLock);
	return lane;
}

// Tells every backend, and every standby's, at once that awa.queue_lanes has
// a new row: their caches of a queue's lanes (LanesOfQueue, KeyedPriorities)
// forget it. A transactional invalidation would be sent only at commit, and
// never if the creator rolls back, while the lane stays.
void
AnnounceNewLane()
{
	SharedInvalidationMessage message;
	message.rc.id = SHAREDINVALRELCACHE_ID;
	message.rc.dbId = MyDatabaseId;
	message.rc.relId = known_lanes_relid;
	if (XLogStandbyInfoActive())
		LogStandbyInvalidations(1, &message, false);
	SendSharedInvalidMessages(&message, 1);
	// This backend reads its own message at its next lock or transaction;
	// a claim in this transaction must see the lane before that.
	ForgetQueues((Datum)0, 0, 0);
}

}  // namespace

Lane
EnsureLane(text *queue, int16 priority, text *key)
{
	RegisterCallbacks();
	known_lanes_relid = AwaObjectOid(AwaObject::kQueueLanes);
	Lane lane;
	Oid incarnation = ExtensionIncarnation();
	uint32 hash = LaneHash(queue, priority, key);
	if (CachedLane(incarnation, hash, queue, priority, key, &lane))
		return lane;
	if (FindLane(queue, priority, key, false, &lane)) {
		CacheLane(incarnation, hash, queue, key, lane);
		return lane;
	}

	// First use: one creator per lane at a time, under the lane create lock,
	// which is held only until the row is in: a transaction that creates
	// 20,000 lanes must not hold 20,000 locks of the cluster's shared lock
	// table to its end (test/t/047_lock_table_bounded.pl). The row is
	// committed as it is inserted, so a later creator finds it at once.
	LockLaneCreate(hash);
	if (FindLane(queue, priority, key, true, &lane)) {
		UnlockLaneCreate(hash);
		CacheLane(incarnation, hash, queue, key, lane);
		return lane;
	}
	Oid id_seq = AwaObjectOid(AwaObject::kQueueLaneIdSeq);
	int64 lane_id = nextval_internal(id_seq, false);
	lane = InsertCommittedLaneRow(queue, priority, lane_id, key);
	UnlockLaneCreate(hash);
	AnnounceNewLane();
	CacheLane(incarnation, hash, queue, key, lane);
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
	if (length <= kMaxQueueBytes) {
		entry.incarnation = incarnation;
		entry.hash = hash;
		entry.length = length;
		memcpy(entry.queue, VARDATA_ANY(queue), length);
		entry.lane_count = count;
		memcpy(entry.lanes, lanes, sizeof(Lane) * count);
		entry.keyed_known = false;
	}
	return count;
}

uint8
KeyedPriorities(text *queue)
{
	RegisterCallbacks();
	Oid incarnation = ExtensionIncarnation();
	int length = VARSIZE_ANY_EXHDR(queue);
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(queue)), length);
	QueueCacheEntry &entry = queue_cache[hash % kQueueCacheSize];
	bool cached = entry.incarnation == incarnation && entry.hash == hash && entry.length == length &&
	              memcmp(entry.queue, VARDATA_ANY(queue), length) == 0;
	if (cached && entry.keyed_known)
		return entry.keyed;
	Datum values[1] = {PointerGetDatum(queue)};
	Execute(Stmt::kKeyedPriorities, 0, values, NULL, kMaxLanesPerQueue);
	uint8 keyed = 0;
	for (uint64 i = 0; i < SPI_processed; i++) {
		bool isnull;
		int16 priority = DatumGetInt16(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		keyed |= static_cast<uint8>(1u << (priority - 1));
	}
	if (cached) {
		entry.keyed = keyed;
		entry.keyed_known = true;
	}
	return keyed;
}

namespace {

// Per-backend cache of committed lanes by lane_id (keyed claims look lanes up
// by the id their scheduler picked). Emptied with the other caches.
constexpr int kLaneIdCacheSize = 16384;
struct LaneIdCacheEntry {
	Oid incarnation;
	uint64 rows_epoch;
	Lane lane;
};
LaneIdCacheEntry lane_id_cache[kLaneIdCacheSize];

}  // namespace

bool
LaneById(int64 lane_id, Lane *lane)
{
	RegisterCallbacks();
	Oid incarnation = ExtensionIncarnation();
	LaneIdCacheEntry &entry = lane_id_cache[static_cast<uint64>(lane_id) % kLaneIdCacheSize];
	if (entry.incarnation == incarnation && entry.rows_epoch == lane_rows_epoch && entry.lane.lane_id == lane_id) {
		*lane = entry.lane;
		return true;
	}
	Datum values[1] = {Int64GetDatum(lane_id)};
	Execute(Stmt::kLaneById, 0, values, NULL, 1);
	if (SPI_processed == 0)
		return false;
	*lane = LaneOfRow(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
	entry.incarnation = incarnation;
	entry.rows_epoch = lane_rows_epoch;
	entry.lane = *lane;
	return true;
}

}  // namespace awa::pg
