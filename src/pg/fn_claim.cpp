// fn_claim.cpp: awa.claim.
//
// One server-side step. For each lane of the queue, most urgent first (with
// priority aging, a lane whose head has waited competes as if it were more
// urgent), whose claim cursor is behind its enqueue cursor: try-lock the lane
// (never wait; a busy lane is some other claimer's), then under the lock
//   1. walk it: load, plan, prove gaps (claim_walk.hpp), and move the cursor
//      over the spent prefix;
//   2. record the planned lanes in the in-flight registry and release the
//      lane lock, so the next claimer may plan while this one writes;
//   3. write the claim evidence and return the jobs (claim_write.hpp).
// The claim never moves the cursor past its own lanes: that happens at the
// next claim of the lane, from this claim's evidence, once it is committed and
// visible. A claim lost before its commit reached disk therefore leaves its
// jobs claimable, and an advance can only apply where its evidence exists.
#include "core/lifecycle.hpp"
#include "core/validate.hpp"
#include "pg/arguments.hpp"
#include "pg/claim_walk.hpp"
#include "pg/claim_write.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/gucs.hpp"
#include "pg/inflight.hpp"
#include "pg/lane_locks.hpp"
#include "pg/lanes.hpp"
#include "pg/queue_settings.hpp"
#include "pg/rings.hpp"
#include "pg/sequences.hpp"

namespace awa::pg {

namespace {

struct LaneOrder {
	int index;
	int effective;
	TimestampTz head;
};

int
CompareLaneOrder(const void *a, const void *b)
{
	const LaneOrder &x = *static_cast<const LaneOrder *>(a);
	const LaneOrder &y = *static_cast<const LaneOrder *>(b);
	if (x.effective != y.effective)
		return x.effective < y.effective ? -1 : 1;
	if (x.head != y.head)
		return x.head < y.head ? -1 : 1;  // equal urgency: the longer wait first
	return x.index < y.index ? -1 : (x.index > y.index ? 1 : 0);
}

struct ClaimRequest {
	text *queue;
	int32 max_jobs;
	Interval *deadline;
	ReturnSetInfo *rsinfo;
};

// Claims from one lane the caller holds the claim lock of. Returns the number
// of jobs emitted; the lane lock is released here when the planned lanes went
// into the in-flight registry (*released), else it is the caller's.
int
ClaimFromLane(text *queue, const Lane &lane, const RingPositions &ring, int32 max_jobs, Interval *deadline,
              ReturnSetInfo *rsinfo, bool *released)
{
	*released = false;
	LaneWalk walk = WalkLane(queue, lane, ring, max_jobs, WalkMode::kClaim);
	ApplyCursorAdvance(lane, walk);
	if (walk.plan.claimed == 0)
		return 0;
	// The planned lanes are decided. Once they are in the in-flight registry
	// no other claim can plan them, so the lane is free for the next claimer
	// while this one reads its rows, writes its evidence and commits.
	if (awa_early_lane_release && RegisterInflight(lane.lane_id, walk.claim, walk.plan.range_count)) {
		UnlockLaneClaim(lane.lane_id);
		*released = true;
	}
	return WriteClaim(queue, lane, ring, walk, deadline, rsinfo);
}

// Judges a deadline as the claim will apply it (calendar months and days), so
// an interval like '1 month -29 days' that can end before it starts is refused.
void
CheckClaimDeadline(Interval *deadline, TimestampTz now)
{
	core::Violation violation;
	TimestampTz probe = DatumGetTimestampTz(
	    DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(now), PointerGetDatum(deadline)));
	Require(core::CheckDeadline(probe - now, &violation), violation);
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa.claim(queue, max_jobs, deadline) -> SETOF jobs
AWA_FUNCTION(awa_claim)
{
	ClaimRequest request;
	request.queue = QueueArgument(fcinfo, 0);
	request.max_jobs = MaxJobsArgument(fcinfo, 1);
	request.deadline = PG_ARGISNULL(2) ? NULL : PG_GETARG_INTERVAL_P(2);
	TimestampTz now = GetCurrentTimestamp();
	if (request.deadline != NULL)
		CheckClaimDeadline(request.deadline, now);

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	request.rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	QueueSettings settings = SettingsOf(request.queue);
	if (settings.paused) {
		SPI_finish();
		return (Datum)0;
	}
	if (request.deadline == NULL) {
		// The queue's default deadline, else five minutes.
		request.deadline = static_cast<Interval *>(palloc0(sizeof(Interval)));
		if (settings.has_deadline)
			*request.deadline = settings.deadline;
		else
			request.deadline->time = 5 * 60 * USECS_PER_SEC;
	}

	// A claim that is its own transaction does not wait for its WAL flush
	// while it holds the lane (docs/architecture.md, "Asynchronous claim
	// commit"); inside a client's transaction block the client's setting stands.
	if (awa_async_claim_commit && !IsTransactionBlock())
		(void)set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0,
		                        false);

	Lane lanes[kMaxLanesPerQueue];
	int lane_count = LanesOfQueue(request.queue, lanes);
	LaneOrder order[kMaxLanesPerQueue];
	int candidates = 0;
	for (int i = 0; i < lane_count; i++) {
		// Cheap check first: an empty lane costs two sequence reads.
		if (SequenceValue(lanes[i].claim_seq) >= SequenceValue(lanes[i].enqueue_seq))
			continue;
		order[candidates++] = LaneOrder{i, lanes[i].priority, 0};
	}
	bool have_ring = false;
	RingPositions ring;
	if (candidates > 1 && settings.aging_micros > 0) {
		// Priority aging: a lane whose head has waited competes as if it
		// were one level more urgent per aging interval; it keeps its lane.
		int64 epoch;
		ring = CurrentRings(&epoch);
		have_ring = true;
		for (int i = 0; i < candidates; i++) {
			order[i].head = LaneHeadRunAt(request.queue, lanes[order[i].index], ring, now);
			order[i].effective =
			    awa::core::EffectivePriority(lanes[order[i].index].priority, now - order[i].head, settings.aging_micros);
		}
		qsort(order, candidates, sizeof(LaneOrder), CompareLaneOrder);
	}
	for (int i = 0; i < candidates; i++) {
		const Lane &lane = lanes[order[i].index];
		// A lane another claimer holds is skipped, never waited for.
		if (!TryLockLaneClaim(lane.lane_id))
			continue;
		if (!have_ring) {
			int64 epoch;
			ring = CurrentRings(&epoch);
			have_ring = true;
		}
		bool released;
		if (ClaimFromLane(request.queue, lane, ring, request.max_jobs, request.deadline, request.rsinfo, &released) > 0)
			break;
		if (!released)
			UnlockLaneClaim(lane.lane_id);
	}
	SPI_finish();
	return (Datum)0;
}
