// batch_scan.hpp: rows of a ring child found through its unique batch_id
// index, without the executor.
//
// A completion reads its claim batch (one probe of the claim child's batch_id
// index) and, per run of the attempts it ends, the closures of the batch that
// can cover the run (two probes of the closure child's). Through SPI each
// read cost some 49,000 instructions, most of them the executor's start
// (callgrind, bench/drain_instructions.sh); here it is an index scan and
// nothing else. The rows read are exactly those of the statements it
// replaces (kClaimBatch, kClosuresOfRun): batch_id in [low, high], in
// batch_id order (backward on request), at most `limit`, under the latest
// snapshot after a command counter increment (as ExecuteLatest reads); the
// child stays locked (AccessShareLock) to the end of the transaction, as the
// statement's lock did.
#pragma once

#include "pg/direct_insert.hpp"
#include "pg/postgres_headers.hpp"

#include <type_traits>

namespace awa::pg {

struct BatchRow {
	HeapTuple tuple;  // the row and the child's descriptor (valid during the visit)
	TupleDesc desc;
};
static_assert(std::is_trivially_destructible_v<BatchRow>, "lives across PostgreSQL errors");

// Calls visit(row, context) for each row, at most `limit`, until visit returns
// false; returns how many it visited. Requires a transaction. May ereport (so
// may the visitor).
int ScanBatchIds(RingTable table, int slot, int64 low, int64 high, bool backward, int64 limit,
                 bool (*visit)(const BatchRow &row, void *context), void *context);

// The column number of `name` in `table`'s child for `slot` (a catalog
// look-up: its callers keep what it returns per slot and extension
// incarnation). May ereport.
AttrNumber BatchColumn(RingTable table, int slot, const char *name);

}  // namespace awa::pg
