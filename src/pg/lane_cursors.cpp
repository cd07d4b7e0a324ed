// lane_cursors.cpp: a lane's cursors in its row (see lane_cursors.hpp).
#include "pg/lane_cursors.hpp"

#include "pg/lane_locks.hpp"
#include "pg/rings.hpp"

extern "C" {
#include "access/generic_xlog.h"
#include "access/rmgr.h"
#include "access/xlog.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "access/xact.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
}

namespace awa::pg {

namespace {

// The row's data starts with lane_id, enqueue_cursor and claim_cursor, three
// NOT NULL bigints (sql/install/03_lanes.sql): each at a fixed offset.
constexpr int kLaneIdOffset = 0;
constexpr int kEnqueueOffset = 8;
constexpr int kClaimOffset = 16;
constexpr int kFixedBytes = 24;
constexpr const char *kFixedColumns[3] = {"lane_id", "enqueue_cursor", "claim_cursor"};

Relation
OpenLanes(LOCKMODE mode)
{
	Oid relid = AwaObjectOid(AwaObject::kQueueLanes);
	if (!OidIsValid(relid))
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("awa: awa.queue_lanes is missing"),
		                errhint("Recreate the extension.")));
	Relation rel = table_open(relid, mode);
	TupleDesc desc = RelationGetDescr(rel);
	bool layout = desc->natts >= 3;
	for (int i = 0; layout && i < 3; i++) {
		Form_pg_attribute column = TupleDescAttr(desc, i);
		layout = !column->attisdropped && column->atttypid == INT8OID && column->attnotnull &&
		         strcmp(NameStr(column->attname), kFixedColumns[i]) == 0;
	}
	if (!layout)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa: awa.queue_lanes does not begin with lane_id, enqueue_cursor, claim_cursor"),
		                errhint("The extension's objects were changed by hand; recreate the extension.")));
	return rel;
}

// The data of the lane's row at `offset` of `page`, or NULL when the item
// there is not that lane's row. A row found through the index is taken as it
// is (`live_only` false); a remembered location only while nothing has
// updated, deleted or locked the row there (an UPDATE by hand leaves the
// cursors' live copy elsewhere).
char *
RowData(Page page, BlockNumber block, OffsetNumber offset, int64 lane_id, bool live_only)
{
	if (offset < FirstOffsetNumber || offset > PageGetMaxOffsetNumber(page))
		return NULL;
	ItemId item = PageGetItemId(page, offset);
	if (!ItemIdIsNormal(item))
		return NULL;
	HeapTupleHeader header = reinterpret_cast<HeapTupleHeader>(PageGetItem(page, item));
	if (HeapTupleHeaderGetNatts(header) < 3 || ItemIdGetLength(item) < header->t_hoff + kFixedBytes)
		return NULL;
	if (live_only) {
		ItemPointerData self;
		ItemPointerSet(&self, block, offset);
		if (!(header->t_infomask & HEAP_XMAX_INVALID) && TransactionIdIsValid(HeapTupleHeaderGetRawXmax(header)))
			return NULL;
		if (!ItemPointerEquals(&header->t_ctid, &self))
			return NULL;
	}
	char *data = reinterpret_cast<char *>(header) + header->t_hoff;
	int64 id;
	memcpy(&id, data + kLaneIdOffset, sizeof(id));
	return id == lane_id ? data : NULL;
}

int64
Field(const char *data, int offset)
{
	int64 value;
	memcpy(&value, data + offset, sizeof(value));
	return value;
}

// The lane's row found by lane_id through the unique index (a row the cached
// location no longer holds: VACUUM FULL or CLUSTER rewrote the table).
ItemPointerData
LocateLane(Relation rel, int64 lane_id)
{
	Oid index = AwaObjectOid(AwaObject::kQueueLanesLaneIdKey);
	if (!OidIsValid(index))
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa: the index awa.queue_lanes_lane_id_key is missing"),
		                errhint("Recreate the extension.")));
	ScanKeyData key;
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(lane_id));
	// SnapshotSelf: committed rows and this transaction's own (a lane created
	// by the current command).
	SysScanDesc scan = systable_beginscan(rel, index, true, SnapshotSelf, 1, &key);
	HeapTuple tuple = systable_getnext(scan);
	ItemPointerData row;
	if (tuple == NULL)
		ItemPointerSetInvalid(&row);
	else
		row = tuple->t_self;
	systable_endscan(scan);
	if (!ItemPointerIsValid(&row))
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa: lane " INT64_FORMAT " is missing from awa.queue_lanes", lane_id),
		                errhint("The extension's objects were changed by hand; recreate the extension.")));
	return row;
}

// The transaction of an UPDATE or DELETE of the row at `offset` that has not
// ended yet, else invalid. Row locks (SELECT FOR ...) do not count, nor does
// the caller's own transaction: the index finds its new version, which it
// commits or, rolling back, loses with the cursor moves made in it.
TransactionId
OpenUpdater(Page page, OffsetNumber offset)
{
	HeapTupleHeader header = reinterpret_cast<HeapTupleHeader>(PageGetItem(page, PageGetItemId(page, offset)));
	if ((header->t_infomask & HEAP_XMAX_INVALID) || HEAP_XMAX_IS_LOCKED_ONLY(header->t_infomask))
		return InvalidTransactionId;
	TransactionId updater = HeapTupleHeaderGetUpdateXid(header);
	if (!TransactionIdIsValid(updater))
		return InvalidTransactionId;
	if (TransactionIdIsCurrentTransactionId(updater) || !TransactionIdIsInProgress(updater))
		return InvalidTransactionId;
	return updater;
}

struct LockedRow {
	Buffer buffer;
	OffsetNumber offset;
	char *data;
};

// Pins and locks (BUFFER_LOCK_SHARE or _EXCLUSIVE) the page of the lane's row.
LockedRow
LockRow(Relation rel, const Lane &lane, int mode)
{
	ItemPointerData row = lane.row;
	bool remembered = ItemPointerIsValid(&row) && lane.rows_epoch == LaneRowsEpoch();
	if (!remembered)
		row = LocateLane(rel, lane.lane_id);
	for (;;) {
		Buffer buffer = ReadBuffer(rel, ItemPointerGetBlockNumber(&row));
		LockBuffer(buffer, mode);
		OffsetNumber offset = ItemPointerGetOffsetNumber(&row);
		if (char *data = RowData(BufferGetPage(buffer), ItemPointerGetBlockNumber(&row), offset, lane.lane_id, remembered)) {
			// A writer must not move a cursor in a version that an open
			// UPDATE (by hand) is replacing: the new version carries the
			// cursors as that UPDATE read them, so the move would be lost when
			// it commits and a lane position handed out twice
			// (test/specs/lane_row_update_by_hand.spec). Wait for it to end,
			// then find the row again.
			TransactionId updater = mode == BUFFER_LOCK_EXCLUSIVE ? OpenUpdater(BufferGetPage(buffer), offset)
			                                                     : InvalidTransactionId;
			if (!TransactionIdIsValid(updater))
				return LockedRow{buffer, offset, data};
			UnlockReleaseBuffer(buffer);
			XactLockTableWait(updater, rel, &row, XLTW_Update);
			remembered = false;
			row = LocateLane(rel, lane.lane_id);
			continue;
		}
		UnlockReleaseBuffer(buffer);
		if (!remembered)
			elog(ERROR, "awa: lane " INT64_FORMAT " is not where its index points", lane.lane_id);
		remembered = false;
		row = LocateLane(rel, lane.lane_id);
	}
}

// Rewrites one cursor of the locked row (exclusive lock) as a generic WAL
// record: the record carries the changed bytes, or the whole page the first
// time the page changes after a checkpoint.
void
WriteCursor(Relation rel, const Lane &lane, const LockedRow &locked, int offset, int64 value)
{
	GenericXLogState *state = GenericXLogStart(rel);
	// Under wal_consistency_checking for generic records, redo compares the
	// replayed page with the primary's image under the generic mask, which
	// ignores no heap hint bit; readers set hint bits on this heap page
	// without WAL, so a delta record would replay into an "inconsistent"
	// page and stop recovery. A full image replays exactly the checked image.
	// (A developer setting: the extra WAL is paid only under it.)
	bool checked = wal_consistency_checking != NULL && wal_consistency_checking[RM_GENERIC_ID];
	Page copy = GenericXLogRegisterBuffer(state, locked.buffer, checked ? GENERIC_XLOG_FULL_IMAGE : 0);
	char *data = RowData(copy, InvalidBlockNumber, locked.offset, lane.lane_id, false);
	memcpy(data + offset, &value, sizeof(value));
	(void)GenericXLogFinish(state);
}

}  // namespace

LaneCursors
ReadLaneCursors(const Lane &lane)
{
	Relation rel = OpenLanes(AccessShareLock);
	LockedRow locked = LockRow(rel, lane, BUFFER_LOCK_SHARE);
	LaneCursors cursors{Field(locked.data, kEnqueueOffset), Field(locked.data, kClaimOffset)};
	UnlockReleaseBuffer(locked.buffer);
	table_close(rel, NoLock);
	return cursors;
}

int64
ReserveLanePositions(const Lane &lane, int64 count)
{
	if (count < 1)
		elog(ERROR, "awa: a lane reservation of " INT64_FORMAT " positions", count);
	// First the lock, then the cursor: ProveLaneReservationsEnded reads the
	// cursor, then waits for the lock's holders.
	LockLaneReserve(lane.lane_id);
	Relation rel = OpenLanes(RowExclusiveLock);
	// As nextval does: a transaction with an xid flushes its WAL at commit,
	// so the positions it was given are not handed out again after a crash
	// (one without an xid commits without a flush;
	// test/t/037_reservation_durable_at_commit.pl). A claim cursor move needs
	// no flush: a lost one is found again by the next claim.
	if (RelationNeedsWAL(rel))
		(void)GetTopTransactionId();
	LockedRow locked = LockRow(rel, lane, BUFFER_LOCK_EXCLUSIVE);
	int64 last = Field(locked.data, kEnqueueOffset);
	if (last > PG_INT64_MAX - count) {
		UnlockReleaseBuffer(locked.buffer);
		ereport(ERROR, (errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
		                errmsg("awa: lane " INT64_FORMAT " has no positions left", lane.lane_id),
		                errhint("Enqueue into another queue or priority.")));
	}
	WriteCursor(rel, lane, locked, kEnqueueOffset, last + count);
	UnlockReleaseBuffer(locked.buffer);
	table_close(rel, NoLock);
	return last + 1;
}

bool
AdvanceClaimCursor(const Lane &lane, int64 value)
{
	Relation rel = OpenLanes(RowExclusiveLock);
	LockedRow locked = LockRow(rel, lane, BUFFER_LOCK_EXCLUSIVE);
	bool moves = value > Field(locked.data, kClaimOffset);
	if (moves)
		WriteCursor(rel, lane, locked, kClaimOffset, value);
	UnlockReleaseBuffer(locked.buffer);
	table_close(rel, NoLock);
	return moves;
}

}  // namespace awa::pg
