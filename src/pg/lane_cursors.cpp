// lane_cursors.cpp: a lane's cursors in its row (see lane_cursors.hpp).
#include "pg/lane_cursors.hpp"

#include "pg/durability.hpp"
#include "pg/lane_locks.hpp"
#include "pg/rings.hpp"
#include "pg/server_run_key.hpp"

#include <initializer_list>

extern "C" {
#include "access/generic_xlog.h"
#include "access/rmgr.h"
#include "access/xlog.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
}

namespace awa::pg {

namespace {

// The row's data starts with lane_id, enqueue_cursor, claim_cursor,
// enqueue_logged and cursor_run, five NOT NULL bigints
// (sql/install/03_lanes.sql): each at a fixed offset.
constexpr int kLaneIdOffset = 0;
constexpr int kEnqueueOffset = 8;
constexpr int kClaimOffset = 16;
constexpr int kLoggedOffset = 24;
constexpr int kRunOffset = 32;
constexpr int kFixedCount = 5;
constexpr int kFixedBytes = 8 * kFixedCount;
constexpr const char *kFixedColumns[kFixedCount] = {"lane_id", "enqueue_cursor", "claim_cursor", "enqueue_logged",
                                                    "cursor_run"};
// How far ahead of the enqueue cursor a logged reservation reaches, as
// nextval logs 32 values ahead (SEQ_LOG_VALS): the reservations after it, up
// to that value, write the cursor in place without a WAL record.
constexpr int64 kLogAhead = 32;

Relation
OpenLanes(LOCKMODE mode)
{
	Oid relid = AwaObjectOid(AwaObject::kQueueLanes);
	if (!OidIsValid(relid))
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("awa: awa.queue_lanes is missing"),
		                errhint("Recreate the extension.")));
	Relation rel = table_open(relid, mode);
	TupleDesc desc = RelationGetDescr(rel);
	bool layout = desc->natts >= kFixedCount;
	for (int i = 0; layout && i < kFixedCount; i++) {
		Form_pg_attribute column = TupleDescAttr(desc, i);
		layout = !column->attisdropped && column->atttypid == INT8OID && column->attnotnull &&
		         strcmp(NameStr(column->attname), kFixedColumns[i]) == 0;
	}
	if (!layout)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa: awa.queue_lanes does not begin with lane_id, enqueue_cursor, claim_cursor, "
		                       "enqueue_logged, cursor_run"),
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
	if (HeapTupleHeaderGetNatts(header) < kFixedCount || ItemIdGetLength(item) < header->t_hoff + kFixedBytes)
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
// location no longer holds: VACUUM FULL or CLUSTER rewrote the table), or an
// invalid location when there is none: maintenance reclaimed the lane
// (fn_reclaim_lanes.cpp), or the row was deleted by hand.
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
	// by the current command); a row whose delete has not committed yet too.
	SysScanDesc scan = systable_beginscan(rel, index, true, SnapshotSelf, 1, &key);
	HeapTuple tuple = systable_getnext(scan);
	ItemPointerData row;
	if (tuple == NULL)
		ItemPointerSetInvalid(&row);
	else
		row = tuple->t_self;
	systable_endscan(scan);
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

// Pins and locks (BUFFER_LOCK_SHARE or _EXCLUSIVE) the page of the lane's
// row; `data` NULL (and no buffer held) when the row is gone.
LockedRow
LockRow(Relation rel, const Lane &lane, int mode)
{
	ItemPointerData row = lane.row;
	bool remembered = ItemPointerIsValid(&row) && lane.rows_epoch == LaneRowsEpoch();
	if (!remembered)
		row = LocateLane(rel, lane.lane_id);
	for (;;) {
		if (!ItemPointerIsValid(&row))
			return LockedRow{InvalidBuffer, InvalidOffsetNumber, NULL};
		Buffer buffer = ReadBuffer(rel, ItemPointerGetBlockNumber(&row));
		LockBuffer(buffer, mode);
		OffsetNumber offset = ItemPointerGetOffsetNumber(&row);
		if (char *data = RowData(BufferGetPage(buffer), ItemPointerGetBlockNumber(&row), offset, lane.lane_id, remembered)) {
			// A writer must not move a cursor in a version that an open
			// UPDATE (by hand) is replacing: the new version carries the
			// cursors as that UPDATE read them, so the move would be lost when
			// it commits and a lane position handed out twice
			// (test/specs/lane_row_update_by_hand.spec). Nor in a row that an
			// open reclaim is deleting (fn_reclaim_lanes.cpp). Wait for it to end,
			// then find the row again (gone, if the delete committed).
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
		if (!remembered) {
			// Found through the index, then gone from its page before the
			// page was locked: a reclaim's delete committed and the page was
			// pruned in between. Looked up once more: gone, or elsewhere.
			ItemPointerData again = LocateLane(rel, lane.lane_id);
			if (ItemPointerIsValid(&again) && ItemPointerEquals(&again, &row))
				elog(ERROR, "awa: lane " INT64_FORMAT " is not where its index points", lane.lane_id);
			row = again;
			continue;
		}
		remembered = false;
		row = LocateLane(rel, lane.lane_id);
	}
}

struct FieldValue {
	int offset;
	int64 value;
};

// Rewrites fields of the locked row (exclusive lock) as one generic WAL
// record: the record carries the changed bytes, or the whole page the first
// time the page changes after a checkpoint.
void
WriteLogged(Relation rel, const Lane &lane, const LockedRow &locked, std::initializer_list<FieldValue> fields)
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
	for (const FieldValue &field : fields)
		memcpy(data + field.offset, &field.value, sizeof(field.value));
	// The record is a delta against the buffer page, which may hold values
	// written in place that no record carries (a claim cursor move with the
	// WAL flushed, a reservation within enqueue_logged). Redo applies the
	// delta to the page as the WAL left it: a field whose new value shares
	// bytes with the in-place value would come out as a mix of the last
	// logged value and the new one, which can be ahead of both
	// (test/t/066_claim_cursor_delta_after_in_place.pl). So each field the
	// record writes that is also written in place (the two cursors; never
	// enqueue_logged or cursor_run) first gets, in the buffer, a value that
	// differs from the new one in every byte: the delta carries all eight
	// bytes. The exclusive lock keeps readers from seeing it.
	START_CRIT_SECTION();
	for (const FieldValue &field : fields) {
		if (field.offset != kEnqueueOffset && field.offset != kClaimOffset)
			continue;
		int64 other = ~field.value;
		memcpy(locked.data + field.offset, &other, sizeof(other));
	}
	(void)GenericXLogFinish(state);
	END_CRIT_SECTION();
}

// The enqueue cursor of the row: the highest position handed out. The row's
// enqueue_cursor is exact while cursor_run is this server run's key; after a
// crash restart, on a standby or after a promotion it may lag the positions
// handed out in place, and enqueue_logged, which the WAL carries, is at or
// above every one of them (docs/architecture.md, "The enqueue cursor is
// logged ahead").
int64
EnqueueCursor(const char *data, uint64 run)
{
	int64 cursor = Field(data, kEnqueueOffset);
	if (run != 0 && Field(data, kRunOffset) == static_cast<int64>(run))
		return cursor;
	return Max(cursor, Field(data, kLoggedOffset));
}

// Writes one field of the locked row (exclusive lock) in place and dirties
// the page, with no WAL record, as nextval writes its values within the
// logged one, if the page has been logged since the current checkpoint began
// (its LSN past the redo pointer, the test nextval makes): its next write to
// disk is then covered by a full-page image in the WAL, and a torn write is
// repaired by redo. Returns whether it wrote; if not, the caller logs the
// change (WriteLogged). Never without WAL (a table made in this transaction
// under wal_level minimal) nor under wal_consistency_checking for generic
// records, where every change is a full image.
//
// DELAY_CHKPT_START, as MarkBufferDirtyHint sets it: a checkpoint whose redo
// pointer is chosen while this backend decides cannot write its buffers
// before the page is dirtied, so it writes the page with this change (and a
// later change is logged, with a full image, since the page's LSN is then
// at or below the new redo pointer); one that chose it before is seen here.
bool
TryWriteInPlace(Relation rel, const LockedRow &locked, int offset, int64 value)
{
	if (!RelationNeedsWAL(rel) || (wal_consistency_checking != NULL && wal_consistency_checking[RM_GENERIC_ID]) ||
	    RecoveryInProgress())
		return false;
	bool written = false;
	START_CRIT_SECTION();
	int delayed = MyProc->delayChkptFlags & DELAY_CHKPT_START;
	MyProc->delayChkptFlags |= DELAY_CHKPT_START;
	if (PageGetLSN(BufferGetPage(locked.buffer)) > GetRedoRecPtr()) {
		// Under the exclusive buffer lock: no reader sees the bytes half-written.
		memcpy(locked.data + offset, &value, sizeof(value));
		MarkBufferDirty(locked.buffer);
		written = true;
	}
	MyProc->delayChkptFlags = (MyProc->delayChkptFlags & ~DELAY_CHKPT_START) | delayed;
	END_CRIT_SECTION();
	return written;
}

// A cursor moves only on a primary. On a hot standby an in-place write
// would change the standby's page with nothing in the WAL (the primary's
// next record for the page would replay over a page it no longer matches),
// and a logged one cannot be made: refused before anything is written
// (test/t/068_standby_claim_moves_nothing.pl; found by a reviewer).
void
RefuseDuringRecovery(const char *what)
{
	if (RecoveryInProgress())
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
		                errmsg("awa: %s cannot move a lane cursor during recovery", what),
		                errhint("Claim and enqueue on the primary.")));
}

}  // namespace

LaneCursors
ReadLaneCursors(const Lane &lane)
{
	Relation rel = OpenLanes(AccessShareLock);
	LockedRow locked = LockRow(rel, lane, BUFFER_LOCK_SHARE);
	if (locked.data == NULL) {
		table_close(rel, NoLock);
		return LaneCursors{0, 0, true};
	}
	LaneCursors cursors{EnqueueCursor(locked.data, ServerRunKey()), Field(locked.data, kClaimOffset), false};
	UnlockReleaseBuffer(locked.buffer);
	table_close(rel, NoLock);
	return cursors;
}

int64
ReserveLanePositions(const Lane &lane, int64 count)
{
	if (count < 1)
		elog(ERROR, "awa: a lane reservation of " INT64_FORMAT " positions", count);
	RefuseDuringRecovery("a lane reservation");
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
	if (locked.data == NULL) {
		table_close(rel, NoLock);
		return 0;
	}
	uint64 run = ServerRunKey();
	int64 last = EnqueueCursor(locked.data, run);
	if (last > PG_INT64_MAX - count) {
		UnlockReleaseBuffer(locked.buffer);
		ereport(ERROR, (errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
		                errmsg("awa: lane " INT64_FORMAT " has no positions left", lane.lane_id),
		                errhint("Enqueue into another queue or priority.")));
	}
	int64 next = last + count;
	// As nextval logs ahead: a record reserves up to kLogAhead positions
	// beyond this call's, and the calls after it that stay within them write
	// the cursor in place and dirty the page, with no record. The logged
	// value reaches the WAL before the commit of any transaction given a
	// position under it (its xid's commit flushes the WAL up to its commit
	// record), so after a crash or a promotion, where the in-place writes may
	// be lost, enqueue_logged still covers every position handed out
	// (EnqueueCursor). A record is written whenever the row is not this run's
	// (the first reservation after a restart or promotion starts above the
	// logged value), the call passes the logged value, or the page may not be
	// written in place (TryWriteInPlace: not logged since the checkpoint
	// began) (test/t/064_enqueue_cursor_logged_ahead.pl).
	bool in_place = run != 0 && Field(locked.data, kRunOffset) == static_cast<int64>(run) &&
	                next <= Field(locked.data, kLoggedOffset) && TryWriteInPlace(rel, locked, kEnqueueOffset, next);
	if (!in_place) {
		// Without the preload (run 0) every reservation is logged exactly.
		int64 logged = run == 0 || next > PG_INT64_MAX - kLogAhead ? next : next + kLogAhead;
		WriteLogged(rel, lane, locked,
		            {{kEnqueueOffset, next}, {kLoggedOffset, logged}, {kRunOffset, static_cast<int64>(run)}});
	}
	UnlockReleaseBuffer(locked.buffer);
	table_close(rel, NoLock);
	return last + 1;
}

bool
LaneRowPresent(const Lane &lane)
{
	Relation rel = OpenLanes(RowExclusiveLock);
	LockedRow locked = LockRow(rel, lane, BUFFER_LOCK_EXCLUSIVE);
	bool present = locked.data != NULL;
	if (present)
		UnlockReleaseBuffer(locked.buffer);
	table_close(rel, NoLock);
	return present;
}

Lane
HoldLane(text *queue, int16 priority, text *key)
{
	Lane lane = EnsureLane(queue, priority, key);
	for (;;) {
		LockLaneHold(lane.lane_id);
		// Under the page's exclusive lock: a reclaim's delete not committed
		// yet is waited for (its locks are given back before its commit).
		if (LaneRowPresent(lane))
			return lane;
		lane = RefindLane(queue, priority, key);
	}
}

bool
AdvanceClaimCursor(const Lane &lane, int64 value, XLogRecPtr passed_commits_end, int64 durable_until)
{
	Relation rel = OpenLanes(RowExclusiveLock);
	LockedRow locked = LockRow(rel, lane, BUFFER_LOCK_EXCLUSIVE);
	if (locked.data == NULL) {
		table_close(rel, NoLock);
		return false;
	}
	bool moves = value > Field(locked.data, kClaimOffset);
	if (moves && RecoveryInProgress()) {
		UnlockReleaseBuffer(locked.buffer);
		RefuseDuringRecovery("a claim");
	}
	// A claim cursor that goes back is safe: a walk from it reads the claims'
	// evidence again and passes what they hold (a cursor move lost with the
	// unflushed end of the WAL is one such case). One that is ahead of a
	// claim lost in a crash is not: the lost claim's jobs would be passed
	// over for good. The move is made only while the evidence it passes is
	// visible, so every claim it relies on has its commit record inserted
	// (claim_walk.hpp), and passed_commits_end is at or past the end of each
	// of those commit records that may not be flushed yet (a commit made with
	// synchronous_commit = off; a synchronous one is flushed before it is
	// visible). When the WAL is flushed up to it, or when every claim not
	// flushed yet lies above the move (durable_until: the walk also reads
	// claims above the lane where its move stops), each claim the move passes
	// is durable, and the move may be written in place with no record: a
	// crash, a standby or a promotion then has an older cursor, never one past
	// a lost claim (docs/architecture.md, "The enqueue cursor is logged
	// ahead" and "A claim cursor move waits only for the commits it passes";
	// test/t/065_claim_cursor_in_place.pl,
	// test/t/001_async_claim_lost_in_crash.pl). Otherwise (an asynchronous
	// claim not flushed yet) the record keeps the move behind the claims'
	// commits in the WAL.
	if (moves) {
		bool durable = !XLogNeedsFlush(passed_commits_end) || durable_until >= value;
		if (!durable || !TryWriteInPlace(rel, locked, kClaimOffset, value))
			WriteLogged(rel, lane, locked, {{kClaimOffset, value}});
	}
	UnlockReleaseBuffer(locked.buffer);
	table_close(rel, NoLock);
	return moves;
}

}  // namespace awa::pg
