// lane_scan.cpp: a lane's rows in one ring child (see lane_scan.hpp).
#include "pg/lane_scan.hpp"

#include "pg/core_calls.hpp"

#include "pg/direct_insert.hpp"
#include "pg/rings.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "executor/tuptable.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
}

namespace awa::pg {

namespace {

constexpr int kFamilies = 3;
constexpr int kMaxSlots = core::kMaxRingSlots;

struct FamilyDef {
	RingTable table;
	const char *lane_column;  // the index's second key column
	const char *columns[kLaneScanColumns];
};

const FamilyDef kDefs[kFamilies] = {
    {RingTable::kReadyEntries, "lane_seq", {"lane_seq", NULL, "origin_generation"}},
    {RingTable::kAttemptBatches, "next_lane_seq", {"lane_ranges", "next_lane_seq", "first_lane_seq"}},
    {RingTable::kTombstones, "lane_seq", {"lane_seq", NULL, NULL}},
};

// Per child: its lane index and the column numbers, for one incarnation.
struct ChildInfo {
	Oid index;
	AttrNumber generation;
	AttrNumber columns[kLaneScanColumns];
};
ChildInfo children[kFamilies][kMaxSlots];
Oid children_incarnation = InvalidOid;

AttrNumber
Column(Relation relation, const char *name)
{
	if (name == NULL)
		return InvalidAttrNumber;
	AttrNumber number = get_attnum(RelationGetRelid(relation), name);
	if (number == InvalidAttrNumber)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("awa: %s has no column %s", RelationGetRelationName(relation), name),
		                errhint("The installed awa library does not match the extension's tables.")));
	return number;
}

// The child's index whose keys start with (lane_id, lane column).
const ChildInfo &
InfoOf(int family, int slot, Relation relation)
{
	Oid incarnation = ExtensionIncarnation();
	if (incarnation != children_incarnation) {
		memset(children, 0, sizeof(children));
		children_incarnation = incarnation;
	}
	ChildInfo &info = children[family][slot];
	if (OidIsValid(info.index))
		return info;
	const FamilyDef &def = kDefs[family];
	AttrNumber keys[2] = {Column(relation, "lane_id"), Column(relation, def.lane_column)};
	Oid found = PlainBtreeIndexOn(relation, keys, 2, false);
	if (!OidIsValid(found))
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("awa: %s has no index on (lane_id, %s)", RelationGetRelationName(relation),
		                       def.lane_column),
		                errhint("The installed awa library does not match the extension's tables.")));
	info.generation = Column(relation, "ready_generation");
	for (int c = 0; c < kLaneScanColumns; c++)
		info.columns[c] = Column(relation, def.columns[c]);
	info.index = found;
	return info;
}

}  // namespace

Oid
PlainBtreeIndexOn(Relation relation, const AttrNumber *keys, int count, bool unique)
{
	Oid found = InvalidOid;
	List *indexes = RelationGetIndexList(relation);
	ListCell *cell;
	foreach (cell, indexes) {
		Relation index = index_open(lfirst_oid(cell), AccessShareLock);
		Form_pg_index form = index->rd_index;
		bool match = form->indnkeyatts >= count && (!unique || (form->indisunique && form->indnkeyatts == count)) &&
		             RelationGetForm(index)->relam == BTREE_AM_OID &&
		             heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL);
		for (int k = 0; match && k < count; k++)
			match = form->indkey.values[k] == keys[k];
		index_close(index, AccessShareLock);
		if (match) {
			found = lfirst_oid(cell);
			break;
		}
	}
	list_free(indexes);
	return found;
}

void
CheckReadyColumns(TupleDesc desc)
{
	if (desc->natts != kReadyColumns)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("awa: awa.ready_entries has %d columns, awa reads %d", desc->natts, kReadyColumns),
		                errhint("The installed awa library does not match the extension's tables.")));
}

int
ScanLane(LaneFamily family, int slot, int64 lane_id, int64 after, int64 generation, int64 limit,
         bool (*visit)(const LaneRow &row, void *context), void *context, int64 before)
{
	if (slot < 0 || slot >= kMaxSlots)
		elog(ERROR, "awa: ring slot %d out of range", slot);
	int f = static_cast<int>(family);
	// As SPI does before a statement that may write: rows this transaction
	// wrote earlier in the same command (a claim's evidence, an enqueue's
	// ready rows, then another claim in one SQL statement) become visible.
	CommandCounterIncrement();
	Relation heap = table_open(RingChildOid(kDefs[f].table, slot), AccessShareLock);
	const ChildInfo &info = InfoOf(f, slot, heap);
	Relation index = index_open(info.index, AccessShareLock);
	Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());

	ScanKeyData keys[3];
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(lane_id));
	// A ready row is the committed range [lane_seq, lane_seq + 1): it lies
	// beyond `after` when its end does, as a range's next_lane_seq > after.
	if (family == LaneFamily::kReady)
		ScanKeyInit(&keys[1], 2, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(after));
	else
		ScanKeyInit(&keys[1], 2, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(after));
	int key_count = 2;
	if (before != PG_INT64_MAX)
		ScanKeyInit(&keys[key_count++], 2, BTLessStrategyNumber, F_INT8LT, Int64GetDatum(before));
	IndexScanDesc scan = index_beginscan(heap, index, snapshot, key_count, 0);
	index_rescan(scan, keys, key_count, NULL, 0);
	TupleTableSlot *row_slot = table_slot_create(heap, NULL);
	int visited = 0;
	// Between rows a scan can be cancelled, as the executor's scans can (an
	// index scan of its own checks for no interrupt). Only the relations'
	// locks, the snapshot and a buffer pin are held here; all go at abort.
	while (visited < limit && index_getnext_slot(scan, ForwardScanDirection, row_slot)) {
		CHECK_FOR_INTERRUPTS();
		bool isnull;
		if (DatumGetInt64(slot_getattr(row_slot, info.generation, &isnull)) != generation)
			continue;
		LaneRow row;
		for (int c = 0; c < kLaneScanColumns; c++) {
			isnull = false;
			row.values[c] = info.columns[c] == InvalidAttrNumber ? (Datum)0
			                                                     : slot_getattr(row_slot, info.columns[c], &isnull);
			// A ready row's origin_generation is NULL while it is the row's
			// own generation; claim evidence's lane_ranges is NULL when it
			// is the one range [first_lane_seq, next_lane_seq), read as
			// (Datum) 0 (04_queue_ring.sql). No other column read here is
			// nullable.
			if (isnull && family == LaneFamily::kReady && c == 2)
				row.values[c] = Int64GetDatum(generation);
			else if (isnull)
				row.values[c] = (Datum)0;
		}
		HeapTuple tuple = ExecFetchSlotHeapTuple(row_slot, false, NULL);
		row.xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);
		row.tuple = tuple;
		row.desc = RelationGetDescr(heap);
		if (!visit(row, context))
			break;
		visited++;
	}
	ExecDropSingleTupleTableSlot(row_slot);
	index_endscan(scan);
	UnregisterSnapshot(snapshot);
	// A child that holds nothing of the lane here (or only rows the visitor
	// stopped at: lanes other claims in flight hold, which the claim never
	// plans) is not kept locked: the
	// walk reads every live generation, so keeping each lock to the end of
	// the transaction made a claimer left idle in its transaction hold every
	// live slot of the queue ring, and the rings stop at their cap (issue 19
	// §3; test/sql/idle_locks.sql). Nothing the claim goes on to do depends
	// on a child where it found nothing: what a prune may carry out of it is
	// read in the newest generation, after this, as the walk always reads it
	// (docs/architecture.md §3). Releasing the one lock this call took leaves
	// a lock the transaction took elsewhere (its writes, an earlier read that
	// found rows) in place.
	LOCKMODE keep = visited == 0 ? AccessShareLock : NoLock;
	index_close(index, keep);
	table_close(heap, keep);
	return visited;
}

}  // namespace awa::pg
