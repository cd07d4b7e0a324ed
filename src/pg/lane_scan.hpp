// lane_scan.hpp: a lane's rows in one ring child, read through its lane index
// without the executor.
//
// The claim walk reads, for every ring generation it looks at, the committed
// ready rows, the claim evidence and the tombstones of its lane beyond the
// cursor, under the lane's claim lock. Through SPI each read costs an
// executor start and end (a third of a claim's time under the lock, perf in
// docs/architecture.md §3); here it is an index scan and nothing else. The
// rows read are exactly those of the statements it replaces: lane_id equal,
// the lane column beyond `after` (a ready row: its lane_seq at or beyond it,
// the range [lane_seq, lane_seq + 1) ending beyond it), the row's ready_generation
// equal to `generation`, in lane order, at most `limit`, under the latest
// snapshot after a command counter increment (as ExecuteLatest reads).
#pragma once

#include "pg/postgres_headers.hpp"

#include <type_traits>

namespace awa::pg {

enum class LaneFamily {
	kReady,       // ready_entries: lane_seq, (unused), origin_generation (its ready_generation when NULL)
	kEvidence,    // ready_claim_attempt_batches: lane_ranges ((Datum) 0 when NULL), next_lane_seq, first_lane_seq
	kTombstones,  // ready_tombstones: lane_seq
};
constexpr int kLaneScanColumns = 3;

struct LaneRow {
	Datum values[kLaneScanColumns];  // the family's columns above, in that order (valid during the visit)
	TransactionId xmin;               // of the row version read
	HeapTuple tuple;                  // the whole row, and the child's descriptor (valid during the visit)
	TupleDesc desc;
};

static_assert(std::is_trivially_destructible_v<LaneRow>, "lives across PostgreSQL errors");

// The columns of awa.ready_entries read from a LaneRow's tuple, by position:
// the order 04_queue_ring.sql declares (then 12_ring_partitions.sql's), which
// direct_insert.cpp's layout writes and whose every insert checks the child's
// column types.
constexpr int kReadyColumns = 19;
constexpr AttrNumber kReadyAttempt = 3;
constexpr AttrNumber kReadyMaxAttempts = 4;
constexpr AttrNumber kReadyJobId = 8;
constexpr AttrNumber kReadyRunAt = 9;
constexpr AttrNumber kReadyCreatedAt = 10;
constexpr AttrNumber kReadyKind = 12;
constexpr AttrNumber kReadyArgs = 13;
constexpr AttrNumber kReadyRunLease = 14;
constexpr AttrNumber kReadyPayload = 18;

// The ready child has the columns read by position above. May ereport.
void CheckReadyColumns(TupleDesc desc);

// The first B-tree index of `relation` without a predicate whose key columns
// begin with keys[0..count); with `unique`, a unique index of exactly those
// key columns. InvalidOid when there is none. (The direct readers find the
// index they probe with it: this file's lane indexes, batch_scan.cpp's
// batch_id indexes.)
Oid PlainBtreeIndexOn(Relation relation, const AttrNumber *keys, int count, bool unique);

// Calls visit(row, context) for each row, at most `limit`, until visit returns
// false (that row is not counted); returns how many it visited. With
// `before`, only rows whose lane column is below it: the index scan then stops
// at the first row past it instead of reading the rest of the lane on its
// leaf page (a B-tree scan reads a page's matching items at once: some
// 10,000 instructions per claim over a backlog, callgrind).
// Requires a transaction. May ereport (so may the visitor).
int ScanLane(LaneFamily family, int slot, int64 lane_id, int64 after, int64 generation, int64 limit,
             bool (*visit)(const LaneRow &row, void *context), void *context, int64 before = PG_INT64_MAX);

}  // namespace awa::pg
