// claim_walk.hpp: the claim walk of one lane: load, plan, prove gaps.
//
// The caller holds the lane's claim lock. The walk
//   1. loads what is visible beyond the lane's claim cursor, one queue-ring
//      generation at a time from the head's generation floor
//      (claim_head_cache.hpp): committed ready rows, the lanes already
//      handed out by committed claims (attempt batches) and tombstones;
//   2. plans (src/core/claim_plan, through claim_bridge.hpp): the spent
//      prefix the cursor may pass, then up to max_jobs committed, unspent,
//      unreserved lanes of one generation;
//   3. proves a hole below a visible lane dead before anything passes it:
//      the hole is looked for in every live generation up to the newest (a
//      prune may have carried its row forward, docs/maintenance.md §3.5), then
//      a wait for the transactions holding the lane's reservations
//      (ProveLaneReservationsEnded: every transaction that reserved a
//      lane_seq has then ended) and a fresh look at every generation again;
//      a hole still empty is spent.
// What the walk plans is written by claim_write.hpp. All types here are
// trivially destructible (guard.hpp).
#pragma once

#include "pg/claim_bridge.hpp"
#include "pg/counters.hpp"
#include "pg/lanes.hpp"
#include "pg/postgres_headers.hpp"
#include "pg/rings.hpp"

namespace awa::pg {

enum class WalkMode {
	kClaim,        // plan up to max_jobs lanes; wait (bounded) for gap proofs
	kAdvanceOnly,  // plan nothing: only the spent prefix; never wait for a proof
};

struct LaneWalk {
	int64 cursor;        // the claim cursor the walk started from
	// The walk started at the lane's in-flight frontier (inflight.hpp) above
	// the cursor: what it saw proves nothing about the lanes below, so it
	// moves no cursor and learns no head.
	bool from_frontier;
	BridgePlan plan;     // new_cursor, generation, claimed, ...
	BridgeRange *claim;  // plan.range_count planned ranges (palloc'd)
	// The lane's head after this claim, as far as the walk's view tells
	// (counters.hpp, "oldest available job"): head.next.state is kHeadKnown
	// with next.seq (run_at still to be read, in next_generation), kHeadEmpty,
	// or kHeadUnknown.
	ClaimHeadNote head;
	int64 next_generation;
	// At or past the end of the commit record of every claim and cancel whose
	// evidence the walk read, where that commit may not be flushed yet (made
	// with synchronous_commit = off); InvalidXLogRecPtr if none. The cursor
	// move over them is written in place once the WAL is flushed up to it
	// (lane_cursors.hpp). durable_until: the last lane position below every
	// row whose commit was not flushed when the walk read it (PG_INT64_MAX:
	// none): a move up to it needs no record even before that.
	XLogRecPtr passed_commits_end;
	int64 durable_until;
};

// Walks `lane` of `queue` (the caller holds its claim lock). Requires SPI. May
// ereport.
LaneWalk WalkLane(text *queue, const Lane &lane, const RingPositions &ring, int32 max_jobs, WalkMode mode);

// Moves the lane's claim cursor over the walk's spent prefix (forward only)
// and remembers the head's generation floor. Returns whether it moved.
bool ApplyCursorAdvance(const Lane &lane, const LaneWalk &walk);

// Moves one lane's claim cursor over its spent prefix (WalkMode::kAdvanceOnly)
// if no claimer holds the lane (try-lock); returns whether it moved. For
// maintenance: awa._advance_cursors and the lane reclaim.
bool AdvanceIdleLaneCursor(text *queue, const Lane &lane, const RingPositions &ring);

// The lane's head now, for awa.queue_metrics: the first committed lane past
// the claim cursor that no committed claim evidence or tombstone covers (lanes
// claimed by other transactions still open count as available; this
// transaction's own claims do not), and its run_at.
// *fallback when the walk cannot tell (more claim evidence above the cursor
// than one page): the caller asks the SQL walk. Requires SPI. May ereport.
LaneHead LaneHeadNow(text *queue, const Lane &lane, const RingPositions &ring, bool *fallback);

// When the lane's head became due: run_at of the ready row of the first lane
// past the cursor and past the spent lanes right after it (the
// cursor lags until the next claim of the lane); `fallback` when the lane
// shows none. Requires SPI. May ereport.
TimestampTz LaneHeadRunAt(text *queue, const Lane &lane, const RingPositions &ring, TimestampTz fallback);

}  // namespace awa::pg
