// lanes.cpp: the lane registry (see lanes.hpp).
#include "pg/lanes.hpp"

#include "pg/core_calls.hpp"
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
#include "rewrite/prs2lock.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
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

// Per-backend cache of committed lanes, keyed by (queue, priority). A lane
// never changes once committed; entries are tied to the extension's
// incarnation, and a lane that the current transaction inserted in itself
// (not committed at insert) is not cached until a later transaction finds it
// committed.
constexpr int kLaneCacheSize = 128;
constexpr int kMaxQueueBytes = 800;  // 200 characters of up to 4 bytes
constexpr int kMaxKeyBytes = static_cast<int>(core::kMaxConcurrencyKeyBytes);  // the longest key a lane has
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
TransactionId lanes_created_by = InvalidTransactionId;
TransactionId lanes_reclaimed_by = InvalidTransactionId;  // NoteLanesReclaimed

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
	if (length > kMaxQueueBytes || key_length > kMaxKeyBytes || LaneCreatedInThisTransaction())
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

// Per-backend cache of the lanes of a queue, for claims. A lane committed at
// insert is announced by a relcache invalidation of awa.queue_lanes at once
// (AnnounceNewLane); one inserted in its transaction, at that commit;
// that (like every pg_class invalidation) empties this cache, and a claim
// takes the invalidations at its start (awa_claim), so it sees every lane
// committed before it began; other readers, every lane committed before
// their transaction began or took its last new lock.
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

// The transaction, other than this one, that inserted the lane's row and is
// still running (InvalidTransactionId: none). A dirty read of the unique index
// on (queue, priority, concurrency_key), as a unique check does: the lane
// create lock is held only while a row is inserted, so a row whose creator
// has not committed yet is seen here, not by a snapshot.
TransactionId
LaneCreatorInProgress(text *queue, int16 priority, text *key)
{
	Relation rel = table_open(known_lanes_relid, AccessShareLock);
	Oid index = AwaObjectOid(AwaObject::kQueueLanesIdentity);
	AttrNumber queue_column = get_attnum(RelationGetRelid(rel), "queue");
	AttrNumber priority_column = get_attnum(RelationGetRelid(rel), "priority");
	AttrNumber key_column = get_attnum(RelationGetRelid(rel), "concurrency_key");
	if (!OidIsValid(index) || queue_column == InvalidAttrNumber || priority_column == InvalidAttrNumber ||
	    key_column == InvalidAttrNumber)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa: awa.queue_lanes has no unique index on (queue, priority, concurrency_key)"),
		                errhint("The extension's objects were changed by hand; recreate the extension.")));
	ScanKeyData keys[3];
	ScanKeyEntryInitialize(&keys[0], 0, queue_column, BTEqualStrategyNumber, InvalidOid,
	                       TupleDescAttr(RelationGetDescr(rel), queue_column - 1)->attcollation, F_TEXTEQ,
	                       PointerGetDatum(queue));
	ScanKeyEntryInitialize(&keys[1], 0, priority_column, BTEqualStrategyNumber, InvalidOid, InvalidOid, F_INT2EQ,
	                       Int16GetDatum(priority));
	if (key == NULL)
		ScanKeyEntryInitialize(&keys[2], SK_ISNULL | SK_SEARCHNULL, key_column, InvalidStrategy, InvalidOid,
		                       InvalidOid, InvalidOid, (Datum)0);
	else
		ScanKeyEntryInitialize(&keys[2], 0, key_column, BTEqualStrategyNumber, InvalidOid,
		                       TupleDescAttr(RelationGetDescr(rel), key_column - 1)->attcollation, F_TEXTEQ,
		                       PointerGetDatum(key));
	SnapshotData dirty;
	InitDirtySnapshot(dirty);
	SysScanDesc scan = systable_beginscan(rel, index, true, &dirty, 3, keys);
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
// the executor: awa.queue_lanes has no expression or partial index, the
// caller checked that no INSERT trigger or rule would have fired
// (CommittedInsertAllowed), and its CHECK constraints are checked here
// (validate.hpp checked the same bounds at the call). The caller holds the
// lane create lock and ShareUpdateExclusiveLock on the table. May ereport.
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
	// The bounds of the table's CHECK constraints (03_lanes.sql), which are
	// validate.hpp's, checked at the call already.
	if (priority < core::kMinPriority || priority > core::kMaxPriority || queue_chars < 1 ||
	    static_cast<size_t>(queue_chars) > core::kMaxNameLength ||
	    (plain_key != NULL &&
	     (VARSIZE_ANY_EXHDR(plain_key) < 1 || VARSIZE_ANY_EXHDR(plain_key) > core::kMaxConcurrencyKeyBytes)))
		ereport(ERROR, (errcode(ERRCODE_CHECK_VIOLATION),
		                errmsg("awa: lane (%d, %d characters of queue) is outside awa.queue_lanes's bounds", priority,
		                       queue_chars),
		                errhint("Queues have 1 to 200 characters, priorities 1 to 4, concurrency keys 1 to 255 bytes.")));
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


// At most this many lanes per transaction are committed at insert; a
// transaction's later new lanes are inserted in it and roll back with it, as
// before (a rolled-back bulk load of 10,000 new keyed lanes leaves at most 16
// rows, not 10,000; found by the adversarial review of stop 45).
constexpr int kMaxCommittedLanesPerTransaction = 16;
TransactionId committed_lanes_xid = InvalidTransactionId;
int committed_lanes = 0;
// The lock was missed in this transaction: its later new lanes try once,
// without sleeping (an enqueue_many of 10,000 new keyed lanes during one
// autovacuum of the table would otherwise sleep 5 ms per lane; found by the
// review of stop 45).
bool committed_lock_missed = false;

// How long a creator tries for ShareUpdateExclusiveLock on awa.queue_lanes
// (another creator holds it for microseconds; VACUUM, ANALYZE, CREATE INDEX
// CONCURRENTLY and REINDEX CONCURRENTLY for their whole run).
constexpr int kCommittedInsertTries = 50;
constexpr long kCommittedInsertSleepUs = 100;

// Whether this lane may be committed at insert, and if so with
// ShareUpdateExclusiveLock on awa.queue_lanes taken (UnlockRelationOid after
// the insert): not past kMaxCommittedLanesPerTransaction, not when an
// INSERT trigger or rule on the table would have to fire (the SPI insert runs
// them), and only while no VACUUM, ANALYZE, CREATE INDEX CONCURRENTLY or
// REINDEX CONCURRENTLY of the table runs. The last: a row committed at insert
// is visible to snapshots taken before it, and the validation scan of a
// concurrent index build inserts every row its snapshot sees that the index
// lacks, so a row that its creator had put into the new index already went in
// twice (a unique index's REINDEX CONCURRENTLY failed with 23505 and left an
// invalid index; a non-unique one held duplicates). Those commands hold the
// lock for their whole run, and the lock conflicts with itself, so a
// committed insert never overlaps one.
bool
CommittedInsertAllowed()
{
	TransactionId top = GetTopTransactionId();
	if (top != committed_lanes_xid) {
		committed_lanes_xid = top;
		committed_lanes = 0;
		committed_lock_missed = false;
	}
	if (committed_lanes >= kMaxCommittedLanesPerTransaction)
		return false;
	// A transaction that deleted lanes (the lane reclaim) inserts a lane made
	// again in itself: committed at insert, it would outlive a rollback that
	// brings the deleted row back, and the lane would have two rows (found by
	// the review of stop 46).
	if (top == lanes_reclaimed_by)
		return false;
	Relation rel = table_open(known_lanes_relid, RowExclusiveLock);
	const TriggerDesc *triggers = rel->trigdesc;
	bool insert_triggers = triggers != NULL && (triggers->trig_insert_before_row || triggers->trig_insert_after_row ||
	                                            triggers->trig_insert_instead_row ||
	                                            triggers->trig_insert_before_statement ||
	                                            triggers->trig_insert_after_statement || triggers->trig_insert_new_table);
	bool insert_rules = false;
	for (int i = 0; rel->rd_rules != NULL && i < rel->rd_rules->numLocks; i++)
		insert_rules = insert_rules || rel->rd_rules->rules[i]->event == CMD_INSERT;
	table_close(rel, NoLock);
	if (insert_triggers || insert_rules)
		return false;
	int tries = committed_lock_missed ? 1 : kCommittedInsertTries;
	for (int attempt = 0; attempt < tries; attempt++) {
		CHECK_FOR_INTERRUPTS();
		if (ConditionalLockRelationOid(known_lanes_relid, ShareUpdateExclusiveLock))
			return true;
		if (attempt + 1 < tries)
			pg_usleep(kCommittedInsertSleepUs);
	}
	committed_lock_missed = true;
	return false;
}

}  // namespace

namespace {

// EnsureLane; `fresh`: not from the cache, and looked for with the latest
// snapshot (RefindLane: the transaction's own snapshot may still show a lane
// that maintenance has since reclaimed).
Lane
FindOrCreateLane(text *queue, int16 priority, text *key, bool fresh)
{
	RegisterCallbacks();
	known_lanes_relid = AwaObjectOid(AwaObject::kQueueLanes);
	Lane lane;
	Oid incarnation = ExtensionIncarnation();
	uint32 hash = LaneHash(queue, priority, key);
	if (fresh)
		lane_cache[hash % kLaneCacheSize].incarnation = InvalidOid;
	else if (CachedLane(incarnation, hash, queue, priority, key, &lane))
		return lane;
	if (FindLane(queue, priority, key, fresh, &lane)) {
		CacheLane(incarnation, hash, queue, key, lane);
		return lane;
	}

	// First use: one creator per lane at a time, under the lane create lock,
	// which is held only until the row is in: a transaction that creates
	// 20,000 lanes must not hold 20,000 locks of the cluster's shared lock
	// table to its end (test/t/047_lock_table_bounded.pl). The row is
	// committed as it is inserted where CommittedInsertAllowed, so a later
	// creator finds it at once. Otherwise it is inserted in this transaction,
	// and a later creator finds it with a dirty read and waits for this
	// transaction's end (as a unique check would, without raising 23505),
	// then sees it committed or gone.
	LockLaneCreate(hash);
	for (;;) {
		CHECK_FOR_INTERRUPTS();
		TransactionId creator = LaneCreatorInProgress(queue, priority, key);
		if (!TransactionIdIsValid(creator))
			break;
		UnlockLaneCreate(hash);
		XactLockTableWait(creator, NULL, NULL, XLTW_None);
		LockLaneCreate(hash);
	}
	if (FindLane(queue, priority, key, true, &lane)) {
		UnlockLaneCreate(hash);
		return lane;
	}
	Oid id_seq = AwaObjectOid(AwaObject::kQueueLaneIdSeq);
	int64 lane_id = nextval_internal(id_seq, false);
	if (CommittedInsertAllowed()) {
		// Committed at insert: nobody waits for this transaction.
		lane = InsertCommittedLaneRow(queue, priority, lane_id, key);
		committed_lanes++;
		// Announced before anything is let go: the row is visible already.
		AnnounceNewLane();
		// Gives back this acquisition only: a transaction that held the lock
		// before (ANALYZE of the table in it) keeps it (enqueue.sql).
		UnlockRelationOid(known_lanes_relid, ShareUpdateExclusiveLock);
		UnlockLaneCreate(hash);
		CacheLane(incarnation, hash, queue, key, lane);
		return lane;
	}
	lanes_created_by = GetTopTransactionId();
	Datum values[4] = {PointerGetDatum(queue), Int16GetDatum(priority), Int64GetDatum(lane_id), PointerGetDatum(key)};
	char nulls[4] = {' ', ' ', ' ', key == NULL ? 'n' : ' '};
	Execute(Stmt::kRegisterLane, 0, values, nulls, 1);
	lane = LaneOfRow(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
	lane.keyed = key != NULL;
	// Other backends' caches of the queue's lanes forget them when this
	// transaction commits (LanesOfQueue); this backend's at once, since no
	// command boundary may come before its next claim reads them (a claim
	// that writes this transaction's pending jobs first, test/t/005).
	UnlockLaneCreate(hash);
	CacheInvalidateRelcacheByRelid(known_lanes_relid);
	ForgetQueues((Datum)0, 0, 0);
	return lane;
}

}  // namespace

Lane
EnsureLane(text *queue, int16 priority, text *key)
{
	return FindOrCreateLane(queue, priority, key, false);
}

Lane
RefindLane(text *queue, int16 priority, text *key)
{
	CHECK_FOR_INTERRUPTS();  // callers loop on it
	return FindOrCreateLane(queue, priority, key, true);
}

namespace {

// Whether a read of a queue's lanes (LanesOfQueue, KeyedPriorities) may be
// kept past this transaction: not while it created a lane (that may roll
// back), and not under REPEATABLE READ or SERIALIZABLE, whose snapshot may
// predate a lane another transaction committed (and announced) since: the
// cache would keep the list without it until the next invalidation, which
// on an idle ring may be long (a claim takes the invalidations at its start,
// so under those levels every claim read them again and cached the old view;
// found by the review of stop 49). A lane found is real under any snapshot,
// so the cache of single lanes (CacheLane, LaneById) needs no such rule.
bool
LaneListsCacheable()
{
	return !LaneCreatedInThisTransaction() && !IsolationUsesXactSnapshot();
}

}  // namespace

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
	if (length <= kMaxQueueBytes && LaneListsCacheable()) {
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
	if (cached && LaneListsCacheable()) {
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
	if (!LaneCreatedInThisTransaction()) {
		entry.incarnation = incarnation;
		entry.rows_epoch = lane_rows_epoch;
		entry.lane = *lane;
	}
	return true;
}

void
NoteLanesReclaimed()
{
	lanes_reclaimed_by = GetTopTransactionId();
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
