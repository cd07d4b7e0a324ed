// lane_cursors.hpp: a lane's two cursors, kept in its row of awa.queue_lanes
// and rewritten in place (docs/architecture.md, "Lane cursors live in the
// lane's row").
//
//  enqueue cursor  the highest lane_seq reserved; moves up by each
//                  reservation and never back (a rolled-back reservation
//                  leaves a hole that claims prove dead, claim_walk.hpp).
//  claim cursor    the highest lane_seq proven spent; moves forward only
//                  (a crash or a promotion may take it back to a value a
//                  record logged: below).
//
// Each change is made under the row's page's exclusive buffer lock and logged
// as a generic WAL record, except a reservation within the enqueue cursor's
// logged-ahead value (enqueue_logged), written in place as nextval's are, and
// a claim cursor move made while the WAL is flushed (docs/architecture.md,
// "The enqueue cursor is logged ahead"). So a
// change is not transactional (like nextval/setval) and leaves no dead tuple;
// a logged one survives a crash and is replayed on standbys, an in-place one
// may be lost in a crash and never reaches a standby: the enqueue cursor is
// then read as enqueue_logged, which covers it, and a claim cursor left
// behind is made up by the next walk. No relation and no lock per
// lane: a lane costs one row. Readers take the page's share lock, so they
// never see a cursor half-written.
#pragma once

#include "pg/lanes.hpp"

namespace awa::pg {

struct LaneCursors {
	int64 enqueue;
	int64 claim;
	// The lane's row is gone: maintenance reclaimed the lane (fn_reclaim_lanes.cpp)
	// after it had been drained and idle; both cursors read 0, so it has no
	// work, and whoever wants to write into the lane finds it again by its
	// identity (RefindLane), which makes a new one.
	bool gone;
};

// Both cursors, read together; the enqueue cursor as the highest position
// handed out (in another server run than the one that wrote it in place: the
// logged value, which covers it). May ereport.
LaneCursors ReadLaneCursors(const Lane &lane);

// Reserves `count` (>= 1) consecutive lane positions and returns the first,
// or 0 when the lane's row is gone (reclaimed: the caller finds the lane
// again with RefindLane and reserves there). Takes the lane's reservation lock
// for the top transaction first (lane_locks.hpp), so a gap proof that reads
// the cursor after this reservation finds this transaction among the lock's
// holders, and a reclaim, which needs that lock in a mode that conflicts,
// waits for it or is waited for. May ereport.
int64 ReserveLanePositions(const Lane &lane, int64 count);

// Whether the lane's row is there, looked at as a writer does: a delete of it
// by a transaction still open (the lane reclaim) is waited for. May ereport.
bool LaneRowPresent(const Lane &lane);

// The lane (EnsureLane), kept from the lane reclaim until this transaction
// ends: its hold lock is taken (lane_locks.hpp), and a lane found gone under
// the lock is made again (RefindLane). For what uses a lane without
// reserving a position in it: a scheduled, retryable or parked job's lane,
// which keeps its queue listed (awa.queue_counts lists the queues that have
// lanes or settings), and a cancel's terminal row, keyed by it. Requires SPI.
// May ereport.
Lane HoldLane(text *queue, int16 priority, text *key);

// Moves the claim cursor to `value` if it is behind it; returns whether it
// moved (never for a lane whose row is gone). `passed_commits_end`: the WAL
// position at or past the end of every commit record the move relies on
// that may not be flushed yet (InvalidXLogRecPtr: none); `durable_until`:
// the last lane position below every claim whose commit was not flushed
// when the walk read it. The move is written in place, with no WAL record,
// once the WAL is flushed up to the former or if `value` is at or below the
// latter; else it is logged. May ereport.
bool AdvanceClaimCursor(const Lane &lane, int64 value, XLogRecPtr passed_commits_end, int64 durable_until);

}  // namespace awa::pg
