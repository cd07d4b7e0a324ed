// direct_insert.hpp: inserting rows into a ring child without the executor.
//
// Every hot-path write (a ready row, claim evidence, closure
// and completion evidence) is one row into one ring child, or the rows of one
// lane of an enqueue_many. Through SPI each
// costs an executor start, a ModifyTable node and an executor end; here it is a
// heap insert plus the index inserts (unique checks included), nothing else.
// This is safe for these tables only: they have no triggers, no CHECK
// constraints and no expression or partial indexes, awa supplies every NOT NULL
// value, and the caller addresses the child that owns the row's slot. Each
// call checks the column count, so a schema that drifted from the code fails
// loudly instead of writing garbage. A row is stored without its trailing
// columns that read back the same when absent (NULLs, and values equal to the
// column's missing value): docs/architecture.md, "A ready row ends at its last
// value".
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

enum class RingTable {
	kReadyEntries,
	kAttemptBatches,
	kClaimBatches,
	kClosureBatches,
	kCompletionBatches,
	kTombstones,
	kCount
};

// The OID of `table`'s child for `slot` (cached per extension incarnation).
// May ereport.
Oid RingChildOid(RingTable table, int slot);

// Inserts values[0..natts) (in column order) into `table`'s child for `slot`.
// May ereport (unique violation, out of memory, ...).
void InsertRingRow(RingTable table, int slot, const Datum *values, const bool *nulls, int natts);
// The same for `rows` rows: values and nulls hold rows * natts entries, row
// after row. Heap rows go in with one multi-insert (one WAL record per page).
void InsertRingRows(RingTable table, int slot, int rows, const Datum *values, const bool *nulls, int natts);

}  // namespace awa::pg
