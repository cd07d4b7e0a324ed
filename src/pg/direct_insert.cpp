// direct_insert.cpp: rows into a ring child without the executor (see
// direct_insert.hpp).
#include "pg/direct_insert.hpp"

#include "pg/core_calls.hpp"

#include "pg/rings.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tupdesc_details.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "utils/datum.h"
#include "utils/rel.h"
}

namespace awa::pg {

namespace {

constexpr int kMaxSlots = core::kMaxRingSlots;
// Rows formed and inserted together: COPY's MAX_BUFFERED_TUPLES and
// MAX_BUFFERED_BYTES.
constexpr int kRowsPerChunk = 1000;
constexpr Size kBytesPerChunk = 65535;
const char *const kFamilies[static_cast<int>(RingTable::kCount)] = {
    "ready_entries",       "ready_claim_attempt_batches",
    "lease_claim_batches", "lease_claim_closure_batches", "receipt_completion_batches",
    "ready_tombstones",
};

// The column types of each family, in the order awa writes them
// (sql/install/04_queue_ring.sql and 05_claim_ring.sql, then the columns
// 12_ring_partitions.sql adds). Checked on every insert: a database made by an
// earlier build of 0.6, whose columns had the same count in another order,
// is refused instead of written with values of the wrong type.
constexpr int kMaxColumns = 19;
struct Layout {
	int natts;
	Oid types[kMaxColumns];
};
const Layout kLayouts[static_cast<int>(RingTable::kCount)] = {
    // ready_entries
    {19,
     {INT2OID, INT2OID, INT2OID, INT2OID, INT8OID, INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID,
      TEXTOID, JSONBOID, INT8OID, TIMESTAMPTZOID, BYTEAOID, INT2OID, JSONBOID, INT8OID}},
    // ready_claim_attempt_batches
    {13,
     {INT2OID, INT2OID, INT2OID, INT8OID, INT8OID, INT8OID, TEXTOID, INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID,
      INT4OID, INT8MULTIRANGEOID}},
    // lease_claim_batches
    {18,
     {INT2OID, INT2OID, INT2OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, TEXTOID, INT8OID, TIMESTAMPTZOID,
      TIMESTAMPTZOID, INT4OID, INT8ARRAYOID, INT2ARRAYOID, INT2ARRAYOID, INT8ARRAYOID, INT8ARRAYOID}},  // job_ids, lane_seqs
    // lease_claim_closure_batches
    {8, {INT2OID, INT2OID, INT8OID, INT8OID, TIMESTAMPTZOID, TEXTOID, INT4OID, INT4ARRAYOID}},
    // receipt_completion_batches
    {12,
     {INT2OID, INT2OID, INT2OID, INT8OID, INT8OID, INT8OID, INT8OID, TEXTOID, TIMESTAMPTZOID, INT4OID, INT8ARRAYOID,
      INT8ARRAYOID}},
    // ready_tombstones
    {8, {INT2OID, INT2OID, INT8OID, INT8OID, TEXTOID, INT8OID, INT8OID, TIMESTAMPTZOID}},
};

// Child OIDs by family and slot, for one incarnation of the extension.
Oid child_oids[static_cast<int>(RingTable::kCount)][kMaxSlots];
Oid child_incarnation = InvalidOid;

// Whether column `i` reads back as values[i] / nulls[i] from a row that ends
// before it: a NULL where the column has no missing value, or the column's
// missing value (PostgreSQL's attmissingval, set when a column is added with a
// constant default) where the value equals it.
bool
ReadsBackWhenAbsent(TupleDesc desc, int i, Datum value, bool isnull)
{
	Form_pg_attribute att = TupleDescAttr(desc, i);
	const AttrMissing *missing = att->atthasmissing && desc->constr != NULL ? desc->constr->missing : NULL;
	bool present = missing != NULL && missing[i].am_present;
	if (isnull)
		return !present;
	return present && datumIsEqual(value, missing[i].am_value, att->attbyval, att->attlen);
}

// The number of leading columns a row must store: the trailing columns that
// read back the same when absent are left out, as PostgreSQL reads the rows
// written before an ADD COLUMN. A fresh ready row ends with run_lease 0 (the
// missing value of its column in every slot's table, 12_ring_partitions.sql)
// and five NULLs: without them it has no null bitmap, and its header is 24
// bytes instead of 32 (docs/architecture.md, "A ready row ends at its last
// value").
int
StoredColumns(TupleDesc desc, const Datum *values, const bool *nulls, int natts)
{
	int stored = natts;
	while (stored > 1 && ReadsBackWhenAbsent(desc, stored - 1, values[stored - 1], nulls[stored - 1]))
		stored--;
	return stored;
}

}  // namespace

Oid
RingChildOid(RingTable table, int slot)
{
	if (slot < 0 || slot >= kMaxSlots)
		elog(ERROR, "awa: ring slot %d out of range", slot);
	Oid incarnation = ExtensionIncarnation();
	if (incarnation != child_incarnation) {
		memset(child_oids, 0, sizeof(child_oids));
		child_incarnation = incarnation;
	}
	Oid &oid = child_oids[static_cast<int>(table)][slot];
	if (!OidIsValid(oid)) {
		char name[NAMEDATALEN];
		snprintf(name, sizeof(name), "%s_%d", kFamilies[static_cast<int>(table)], slot);
		Oid found = get_relname_relid(name, get_namespace_oid("awa", false));
		if (!OidIsValid(found))
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("awa: ring child awa.%s is missing", name),
			                errhint("The ring tables were changed by hand; recreate the extension.")));
		oid = found;
	}
	return oid;
}

void
InsertRingRows(RingTable table, int slot, int rows, const Datum *values, const bool *nulls, int natts)
{
	Relation relation = table_open(RingChildOid(table, slot), RowExclusiveLock);
	TupleDesc desc = RelationGetDescr(relation);
	const Layout &layout = kLayouts[static_cast<int>(table)];
	if (desc->natts != natts || natts != layout.natts)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("awa: %s has %d columns, awa writes %d", RelationGetRelationName(relation), desc->natts,
		                       natts),
		                errhint("The installed awa library does not match the extension's tables.")));
	for (int i = 0; i < natts; i++)
		if (TupleDescAttr(desc, i)->atttypid != layout.types[i] || TupleDescAttr(desc, i)->attisdropped)
			ereport(ERROR,
			        (errcode(ERRCODE_DATA_CORRUPTED),
			         errmsg("awa: column %d of %s is not of the type awa writes there", i + 1,
			                RelationGetRelationName(relation)),
			         errhint("The database was made by an earlier build of awa 0.6, whose tables had another layout: "
			                 "recreate the extension (sql/updates/README.md).")));

	EState *estate = CreateExecutorState();
	ResultRelInfo *result = makeNode(ResultRelInfo);
	InitResultRelInfo(result, relation, 1, NULL, 0);
	ExecOpenIndices(result, false);
	CommandId command = GetCurrentCommandId(true);

	// Rows go in chunks through one set of slots, as COPY buffers them: at
	// most kRowsPerChunk rows and about kBytesPerChunk bytes. Each slot pins
	// the tuple descriptor in the resource owner, whose array of identical
	// references is searched on release, so a slot per row made a call of n
	// rows cost O(n^2) (a million rows ran for more than 12 minutes). A slot
	// owns its tuple (freed when it is cleared, so the multi-insert does not
	// copy it again); whatever else a chunk allocates lives in a context reset
	// after it; a cancel is seen between chunks.
	int chunk_rows = rows < kRowsPerChunk ? rows : kRowsPerChunk;
	TupleTableSlot **slots = static_cast<TupleTableSlot **>(palloc(sizeof(TupleTableSlot *) * chunk_rows));
	for (int r = 0; r < chunk_rows; r++)
		slots[r] = ExecInitExtraTupleSlot(estate, desc, &TTSOpsHeapTuple);
	MemoryContext chunk_context =
	    AllocSetContextCreate(CurrentMemoryContext, "awa ring insert chunk", ALLOCSET_DEFAULT_SIZES);
	// Descriptors of the first k columns, made the first time a row stores k
	// (heap_form_tuple writes as many columns as its descriptor has).
	TupleDesc *prefixes = static_cast<TupleDesc *>(palloc0(sizeof(TupleDesc) * (natts + 1)));
	prefixes[natts] = desc;
	for (int first = 0; first < rows;) {
		CHECK_FOR_INTERRUPTS();
		MemoryContext caller = MemoryContextSwitchTo(chunk_context);
		int n = 0;
		Size bytes = 0;
		while (n < chunk_rows && first + n < rows && bytes < kBytesPerChunk) {
			int row = first + n;
			const Datum *row_values = values + row * natts;
			const bool *row_nulls = nulls + row * natts;
			int stored = StoredColumns(desc, row_values, row_nulls, natts);
			if (prefixes[stored] == NULL) {
				MemoryContext chunk = MemoryContextSwitchTo(caller);
				// An anonymous row type (RECORDOID), not the table's, which
				// has every column: the header's type fields become the row's
				// xmin and xmax when heap_insert writes it.
				prefixes[stored] = CreateTemplateTupleDesc(stored);
				for (int i = 0; i < stored; i++)
					TupleDescCopyEntry(prefixes[stored], i + 1, desc, i + 1);
				MemoryContextSwitchTo(chunk);
			}
			HeapTuple tuple =
			    heap_form_tuple(prefixes[stored], const_cast<Datum *>(row_values), const_cast<bool *>(row_nulls));
			bytes += tuple->t_len;
			ExecStoreHeapTuple(tuple, slots[n], true);
			n++;
		}
		if (n == 1)
			table_tuple_insert(relation, slots[0], command, 0, NULL);
		else
			// One WAL record per heap page instead of one per row (as COPY does).
			table_multi_insert(relation, slots, n, command, 0, NULL);
		for (int r = 0; r < n; r++) {
			List *recheck = ExecInsertIndexTuples(result, slots[r], estate, false, false, NULL, NIL);
			list_free(recheck);
			ExecClearTuple(slots[r]);
		}
		MemoryContextSwitchTo(caller);
		MemoryContextReset(chunk_context);
		ResetPerTupleExprContext(estate);
		first += n;
	}
	MemoryContextDelete(chunk_context);

	// Close the indexes keeping their RowExclusiveLock until the transaction
	// ends, as the table's (ExecCloseIndices would release and the next row
	// would take it again).
	for (int i = 0; i < result->ri_NumIndices; i++)
		if (result->ri_IndexRelationDescs[i] != NULL)
			index_close(result->ri_IndexRelationDescs[i], NoLock);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	table_close(relation, NoLock);
}

void
InsertRingRow(RingTable table, int slot, const Datum *values, const bool *nulls, int natts)
{
	InsertRingRows(table, slot, 1, values, nulls, natts);
}

}  // namespace awa::pg
