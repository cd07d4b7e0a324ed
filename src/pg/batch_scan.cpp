// batch_scan.cpp: see batch_scan.hpp.
#include "pg/batch_scan.hpp"

#include "pg/core_calls.hpp"
#include "pg/lane_scan.hpp"
#include "pg/rings.hpp"

extern "C" {
#include "access/genam.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
}

namespace awa::pg {

namespace {

constexpr int kTables = static_cast<int>(RingTable::kCount);
constexpr int kMaxSlots = core::kMaxRingSlots;

// Per child: its unique batch_id index, for one incarnation.
Oid batch_indexes[kTables][kMaxSlots];
Oid indexes_incarnation = InvalidOid;

void
ForgetOnNewIncarnation()
{
	Oid incarnation = ExtensionIncarnation();
	if (incarnation != indexes_incarnation) {
		memset(batch_indexes, 0, sizeof(batch_indexes));
		indexes_incarnation = incarnation;
	}
}

// The child's unique B-tree index on (batch_id) (12_ring_partitions.sql:
// <child>_batch_id_key).
Oid
BatchIndexOf(RingTable table, int slot, Relation relation)
{
	ForgetOnNewIncarnation();
	Oid &cached = batch_indexes[static_cast<int>(table)][slot];
	if (OidIsValid(cached))
		return cached;
	AttrNumber batch_id[1] = {get_attnum(RelationGetRelid(relation), "batch_id")};
	Oid found = PlainBtreeIndexOn(relation, batch_id, 1, true);
	if (!OidIsValid(found))
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("awa: %s has no unique index on batch_id", RelationGetRelationName(relation)),
		                errhint("The installed awa library does not match the extension's tables.")));
	cached = found;
	return found;
}

}  // namespace

AttrNumber
BatchColumn(RingTable table, int slot, const char *name)
{
	AttrNumber number = get_attnum(RingChildOid(table, slot), name);
	if (number == InvalidAttrNumber)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("awa: a ring child has no column %s", name),
		                errhint("The installed awa library does not match the extension's tables.")));
	return number;
}

int
ScanBatchIds(RingTable table, int slot, int64 low, int64 high, bool backward, int64 limit,
             bool (*visit)(const BatchRow &row, void *context), void *context)
{
	if (slot < 0 || slot >= kMaxSlots)
		elog(ERROR, "awa: ring slot %d out of range", slot);
	// As SPI does before a statement that may write (lane_scan.cpp).
	CommandCounterIncrement();
	Relation heap = table_open(RingChildOid(table, slot), AccessShareLock);
	Relation index = index_open(BatchIndexOf(table, slot, heap), AccessShareLock);
	Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyData keys[2];
	ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(low));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(high));
	IndexScanDesc scan = index_beginscan(heap, index, snapshot, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	TupleTableSlot *row_slot = table_slot_create(heap, NULL);
	int visited = 0;
	// Between rows a scan can be cancelled; only the locks, the snapshot and
	// a buffer pin are held here, and all go at abort.
	while (visited < limit &&
	       index_getnext_slot(scan, backward ? BackwardScanDirection : ForwardScanDirection, row_slot)) {
		CHECK_FOR_INTERRUPTS();
		BatchRow row{ExecFetchSlotHeapTuple(row_slot, false, NULL), RelationGetDescr(heap)};
		if (!visit(row, context))
			break;
		visited++;
	}
	ExecDropSingleTupleTableSlot(row_slot);
	index_endscan(scan);
	UnregisterSnapshot(snapshot);
	// Kept locked to the end of the transaction, as the statement's lock was.
	index_close(index, NoLock);
	table_close(heap, NoLock);
	return visited;
}

}  // namespace awa::pg
