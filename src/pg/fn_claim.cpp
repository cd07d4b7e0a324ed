// fn_claim.cpp: awa.claim.
//
// One server-side step. For each lane of the queue, most urgent first (with
// priority aging, a lane whose head has waited competes as if it were more
// urgent), whose claim cursor is behind its enqueue cursor: try-lock the lane
// (a busy lane is some other claimer's; it is waited for, briefly, only when
// no free lane yields jobs), then under the lock
//   1. walk it: load, plan, prove gaps (claim_walk.hpp), and move the cursor
//      over the spent prefix;
//   2. record the planned lanes in the in-flight registry and release the
//      lane lock, so the next claimer may plan while this one writes;
//   3. write the claim evidence and return the jobs (claim_write.hpp).
// The claim never moves the cursor past its own lanes: that happens at the
// next claim of the lane, from this claim's evidence, once it is committed and
// visible. A claim lost before its commit reached disk therefore leaves its
// jobs claimable, and an advance can only apply where its evidence exists.
#include "pg/core_calls.hpp"

#include <type_traits>

#include "pg/arguments.hpp"
#include "pg/claim_walk.hpp"
#include "pg/claim_write.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/gucs.hpp"
#include "pg/inflight.hpp"
#include "pg/counters.hpp"
#include "pg/key_lanes.hpp"
#include "pg/key_limits.hpp"
#include "pg/lane_locks.hpp"
#include "pg/lanes.hpp"
#include "pg/pending_enqueues.hpp"
#include "pg/queue_settings.hpp"
#include "pg/rings.hpp"
#include "pg/lane_cursors.hpp"
#include "pg/running_limits.hpp"
#include "pg/wakeups.hpp"
#include "pg/claim_sleep.hpp"
#include "pg/claim_waiters.hpp"
#include "pg/subtransaction.hpp"

extern "C" {
#include "storage/proc.h"
#include "utils/inval.h"
}

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
	Interval *deadline;  // NULL: the queue's default
	ReturnSetInfo *rsinfo;
	uint32 wake_bucket;
	// The last look may have missed claimable work for want of time: a
	// busy lane's wait timed out. No wake-up may follow (a lane released by
	// a cancel's end wakes nobody), so a waiting claim looks again soon
	// instead of sleeping its whole wait. (A hole whose proof timed out needs
	// no such care: the enqueue that holds it wakes the queue's waiters when
	// it ends.)
	bool unsure;
	// The last look found the queue's rate limit out of tokens: the next one
	// comes in this many microseconds (0: none expected).
	int64 retry_after_micros;
	// A claim with `wait`: a look that finds nothing must leave nothing
	// behind (no xid, no lock), so it does not persist a cursor advance.
	bool waiting;
	// Where what must outlive a look is allocated (the default deadline).
	MemoryContext keep;
};

// The local transaction that keeps a lane claim lock until it ends (a claim
// whose lanes did not go into the in-flight registry). It does not wait for
// another lane; every lane wait is bounded besides (awa.lane_wait_timeout),
// so claimers never wait for each other in a lasting cycle.
static_assert(std::is_trivially_destructible_v<ClaimRequest>, "lives across PostgreSQL errors");

LocalTransactionId keeps_lane_lock = InvalidLocalTransactionId;

// One claim batch from a lane the caller holds the claim lock of (see
// ClaimFromLane). Returns the number of jobs emitted; the lane lock is
// released here when the planned lanes went into the in-flight registry
// (*released), else it is the caller's. *exhausted (may be NULL): the walk
// saw nothing claimable left in the lane after this claim (key_lanes.hpp
// drops such a lane from its scheduler); *last_job_id (may be NULL): the
// highest job_id claimed, raised. *generation_end: the walk stopped at lanes
// of a later generation than the ones it took (a claim batch takes lanes of
// one generation: its evidence lives in that generation's slot).
int
ClaimBatchFromLane(ClaimRequest &request, const Lane &lane, const RingPositions &ring, bool *released,
                   bool *exhausted, int64 *last_job_id, bool *generation_end)
{
	*released = false;
	LaneWalk walk = WalkLane(request.queue, lane, ring, request.max_jobs, WalkMode::kClaim);
	*generation_end = walk.plan.stop == kStopGeneration;
	// A walk that plans nothing saw no claimable job: claims pass holes (issue
	// 19 §1), jobs held by claims in flight come back with their aborts (which
	// make the lane a member again), and an open enqueue's commit makes it a
	// member (or, for the lane without a key, the claim looks at it directly:
	// ClaimFromKeyedPriority). One that took the head and saw nothing reserved
	// after it emptied the lane. A walk from the frontier proves nothing below it.
	// Nor does one that stopped at a hole it could not prove dead: committed
	// jobs wait past it, and what holds the proof back (a move or read-back
	// holding a position of this lane until it ends, any transaction holding
	// the wide reserve lock) may end without a commit into this lane, which is
	// all that would make the lane a member again. A keyed lane taken out
	// then kept its jobs unclaimed until a restart (found by the randomized
	// model test; test/specs/keyed_lane_after_aborted_move.spec,
	// keyed_lane_wide_reserve_gap.spec).
	if (exhausted != NULL)
		*exhausted = !walk.from_frontier && walk.plan.stop != kStopGap &&
		             (walk.plan.claimed == 0 || walk.head.next.state == kHeadEmpty);
	// setval takes an xid and a lock that a rolled-back look would keep:
	// a waiting look advances the cursor only when it claims (the next
	// claim, or the worker's idle-lane advance, does it otherwise).
	if (!request.waiting || walk.plan.claimed > 0)
		ApplyCursorAdvance(lane, walk);
	if (walk.plan.claimed == 0)
		return 0;
	// The planned lanes are decided. Once they are in the in-flight registry
	// no other claim can plan them, so the lane is free for the next claimer
	// while this one reads its rows, writes its evidence and commits.
	if (awa_early_lane_release &&
	    RegisterInflight(lane.lane_id, walk.claim, walk.plan.range_count, request.wake_bucket)) {
		UnlockLaneClaim(lane.lane_id);
		*released = true;
	} else {
		// The lock is kept until the end, when the lane is free again (and,
		// after an abort, its jobs too): the queue's waiting claims look then.
		keeps_lane_lock = MyProc->lxid;
		WakeQueueBucketAtEnd(request.wake_bucket);
	}
	return WriteClaim(request.queue, lane, ring, walk, request.deadline, request.rsinfo, last_job_id);
}

// Claims from one lane the caller holds the claim lock of, up to
// request.max_jobs, in lane order: a batch per generation. When a batch
// stopped at a later generation's lanes with room left, the lane is claimed
// from again for the rest while its claim lock is free (another claimer
// planning it now takes those jobs itself). (One batch only, a claim of 10
// took 1 of 2 available jobs when the second was enqueued or promoted after
// a rotation: found by review; test/sql/claim_generations.sql.) *released, as for the
// first batch: the caller unlocks the lane when it is false and nothing was
// claimed; *exhausted: what the last batch's walk saw.
int
ClaimFromLane(ClaimRequest &request, const Lane &lane, const RingPositions &ring, bool *released,
              bool *exhausted = NULL, int64 *last_job_id = NULL)
{
	bool generation_end;
	bool first_exhausted;
	int claimed = ClaimBatchFromLane(request, lane, ring, released, &first_exhausted, last_job_id, &generation_end);
	if (exhausted != NULL)
		*exhausted = first_exhausted;
	int want = request.max_jobs;
	while (claimed > 0 && generation_end && claimed < want) {
		CHECK_FOR_INTERRUPTS();
		if (!TryLockLaneClaim(lane.lane_id))
			break;
		bool batch_released;
		bool batch_exhausted;
		request.max_jobs = want - claimed;
		int taken = ClaimBatchFromLane(request, lane, ring, &batch_released, &batch_exhausted, last_job_id,
		                               &generation_end);
		request.max_jobs = want;
		if (!batch_released && taken == 0)
			UnlockLaneClaim(lane.lane_id);
		if (taken == 0)
			break;
		// A batch that took nothing says nothing about the lane: only one
		// that took jobs may tell the key scheduler the lane is empty after it.
		if (exhausted != NULL)
			*exhausted = batch_exhausted;
		claimed += taken;
	}
	return claimed;
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

// How long a claim waits for work, in microseconds (0: it does not wait).
int64
ClaimWaitMicros(Interval *wait, TimestampTz now)
{
	if (wait == NULL)
		return 0;
	core::Violation violation;
	TimestampTz until = DatumGetTimestampTz(
	    DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(now), PointerGetDatum(wait)));
	Require(core::CheckClaimWait(until - now, &violation), violation);
	return until - now;
}

// Locks a lane's claim lock: at once, or (`wait`) within awa.lane_wait_timeout.
bool
LockLane(ClaimRequest *request, const Lane &lane, bool wait)
{
	if (TryLockLaneClaim(lane.lane_id))
		return true;
	if (wait && keeps_lane_lock != MyProc->lxid && awa_lane_wait_timeout_ms > 0 &&
	    LockLaneClaimWithin(lane.lane_id, awa_lane_wait_timeout_ms))
		return true;
	request->unsure = true;
	return false;
}

// Claims from one lane under its claim lock; 0 when it is busy (waited for
// when `wait`) or yields nothing.
int
ClaimFromLaneLocked(ClaimRequest *request, const Lane &lane, const RingPositions &ring, bool *exhausted,
                    int64 *last_job_id = NULL, bool wait = true)
{
	*exhausted = false;
	if (!LockLane(request, lane, wait))
		return 0;
	bool released;
	int claimed = ClaimFromLane(*request, lane, ring, &released, exhausted, last_job_id);
	if (!released && claimed == 0)
		UnlockLaneClaim(lane.lane_id);
	return claimed;
}

// What the queue's limits per key (key_limits.hpp) let a claim of `want`
// jobs of `key` start now: the key's rate tokens first (held in
// kKeyRateHold), then room under key_max_running (ReserveRunning, the
// queue's own protocol on the key's counters entry).
struct KeyAllowance {
	text *name;   // the key's counters name
	int tokens;   // held rate tokens (== want without a key rate)
	int granted;  // jobs the key may start (reserved)
	bool by_running;  // refused by key_max_running (not by the rate)
};
static_assert(std::is_trivially_destructible_v<KeyAllowance>, "lives across PostgreSQL errors");

KeyAllowance
AllowKey(ClaimRequest *request, const QueueSettings &settings, text *key, int want)
{
	KeyAllowance a{KeyCounterName(request->queue, key), want, want, false};
	if (settings.key_rate_count > 0) {
		RateLimit limit{settings.key_rate_count, settings.key_rate_period_micros, settings.key_rate_burst,
		                settings.key_rate_set_at};
		int64 wait_micros;
		a.tokens = TakeRateTokens(a.name, limit, want, &wait_micros, kKeyRateHold);
		// No counters entry to be had for the key (the database's share of
		// awa.max_queues_per_database used up by its queues and keys): the
		// key's rate is the one of its lane's bucket in the key scheduler,
		// which the pick already took tokens from (per priority; full after
		// a restart). Found from outside: such keys were never claimed.
		if (a.tokens < 0)
			a.tokens = want;
		if (a.tokens == 0) {
			if (wait_micros > 0 && (request->retry_after_micros == 0 || wait_micros < request->retry_after_micros))
				request->retry_after_micros = wait_micros;
			a.granted = 0;
			return a;
		}
	}
	a.granted = a.tokens;
	if (settings.key_max_running > 0) {
		a.granted = ReserveRunning(a.name, settings.key_max_running, a.tokens);
		a.by_running = a.granted == 0;
	}
	return a;
}

// The claim took `claimed` of what AllowKey granted: the rest goes back.
// True when reserved room went back (others may have been held by it).
bool
SettleKey(const QueueSettings &settings, const KeyAllowance &a, int claimed)
{
	bool returned = false;
	if (settings.key_max_running > 0 && a.granted > claimed) {
		ReturnRunning(a.name, a.granted - claimed);
		returned = true;
	}
	if (settings.key_rate_count > 0 && a.tokens > 0)
		ReturnRateTokens(a.tokens - claimed, settings.key_rate_burst, kKeyRateHold);
	return returned;
}

// A priority of a queue with keyed lanes (key_lanes.hpp): the scheduler's
// lanes in its order; without a scheduler, every lane of the priority. A pick
// whose walk plans nothing drops the lane and picks again (members without
// work are few: a lane is dropped the first time a claim finds it empty). A
// pick that finds its lane busy (waited for once a look, at most
// awa.lane_wait_timeout), or whose walk started at the in-flight frontier and
// planned nothing, moves the lane behind the others (SettleKeyedPick), so the
// next pick goes elsewhere; at most kMaxKeyedPicks of those a look. A key at
// key_max_running whose lane leaves the scheduler is not one of them: each
// such block shrinks the scheduler, so they end, and a look after a restart
// (a scheduler built afresh, every lane in it, many keys at their limit) must
// pass all of them to reach a key with room. Found by test/t/059: with more
// than 16 keys at their limit ahead, a claim returned nothing while a key had
// room and jobs.
constexpr int kMaxKeyedPicks = 16;
// Every lane of a keyed priority in turn, but those in `skip`, until one
// yields jobs: a claim without a scheduler, and a look whose picks got stuck
// on lanes that yield nothing (ClaimFromKeyedPriority). With `keyed`, a lane
// that yields jobs and has more is made a member (the scheduler may not have
// known it), and a busy lane is not waited for (the picks may have waited
// already). What such a look takes is not charged to the key's pass.
int
ClaimFromEveryLane(ClaimRequest *request, const QueueSettings &settings, int16 priority, const int64 *skip,
                   int skip_count, const KeyedPriority *keyed)
{
	bool wait = keyed == NULL;
	int64 epoch;
	RingPositions ring = CurrentRings(&epoch);
	Lane *lanes;
	int count = LanesOfPriority(request->queue, priority, &lanes);
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();
		bool skipped = false;
		for (int k = 0; k < skip_count; k++)
			skipped = skipped || skip[k] == lanes[i].lane_id;
		if (skipped)
			continue;
		LaneCursors cursors = ReadLaneCursors(lanes[i]);
		if (cursors.claim >= cursors.enqueue)
			continue;
		bool exhausted = true;
		int claimed = 0;
		text *key = lanes[i].keyed && HasKeyLimits(settings) ? KeyOfLane(lanes[i].lane_id) : NULL;
		if (key == NULL) {
			claimed = ClaimFromLaneLocked(request, lanes[i], ring, &exhausted, NULL, wait);
		} else {
			int want = request->max_jobs;
			KeyAllowance a = AllowKey(request, settings, key, want);
			if (a.granted > 0) {
				request->max_jobs = a.granted;
				claimed = ClaimFromLaneLocked(request, lanes[i], ring, &exhausted, NULL, wait);
				request->max_jobs = want;
			}
			// As after a pick (ClaimFromKeyedPriority): room given back may
			// have held other claims' picks of the key, so with a scheduler
			// its lanes come back now, and at this transaction's end.
			bool gave_back = SettleKey(settings, a, claimed);
			if (keyed != NULL && gave_back)
				UnblockKeyLanesNow(request->queue, key);
			if (keyed != NULL && claimed > 0 && settings.key_max_running > 0)
				UnblockKeyLanesAtEnd(request->queue, key);
		}
		if (claimed > 0) {
			if (keyed != NULL && !exhausted)
				ActivateKeyedLane(*keyed, lanes[i].lane_id);
			return claimed;
		}
	}
	return 0;
}

int
ClaimFromKeyedPriority(ClaimRequest *request, const QueueSettings &settings, int16 priority, const Lane *unkeyed)
{
	int64 epoch;
	KeyedPriority keyed = OpenKeyedPriority(request->queue, priority, settings.fair_keys);
	if (keyed.slot < 0)
		return ClaimFromEveryLane(request, settings, priority, NULL, 0, NULL);
	// The queue's key rate, in the scheduler too: a key out of tokens waits
	// there until its next token (no pick finds it meanwhile).
	ApplyKeyLimits(keyed, settings.key_max_running, settings.key_rate_count, settings.key_rate_period_micros,
	               settings.key_rate_burst);
	int want = request->max_jobs;
	bool waited = false;
	// Lanes whose pick in this look yielded nothing though they are not
	// empty (busy, a hole not proven dead, the in-flight frontier).
	int64 fruitless_lanes[kMaxKeyedPicks];
	int fruitless = 0;
	bool stuck = false;
	while (fruitless < kMaxKeyedPicks) {
		CHECK_FOR_INTERRUPTS();
		// Afresh each pick: a look over many empty lanes may outlast a rotation.
		RingPositions ring = CurrentRings(&epoch);
		int64 lane_id = 0;
		uint32 activations = 0;
		int charged = PickKeyedLane(keyed, want, &lane_id, &activations);
		if (charged == 0)
			break;
		// Picked again after yielding nothing: it is still first in order
		// (the one job's worth of pass it kept does not put it behind a key
		// whose pass is further ahead), so every pick left would be it. The
		// picks are stuck: the other lanes are looked at in turn below.
		// (Picking it 16 times, a claim returned a less urgent priority's
		// jobs while a key of this one had jobs: the model test, stop 42.)
		bool again = false;
		for (int k = 0; k < fruitless; k++)
			again = again || fruitless_lanes[k] == lane_id;
		if (again) {
			SettleKeyedPick(keyed, lane_id, charged, 0, false, activations, 0);
			stuck = true;
			break;
		}
		Lane lane;
		int claimed = 0;
		bool exhausted = true;  // a lane that is gone has no work
		int64 last_job_id = 0;
		if (LaneById(lane_id, &lane)) {
			// The key's limits (key_limits.hpp): a key at key_max_running
			// leaves the scheduler (looked at again once blocked: room freed
			// in between brings it back); one out of key rate tokens moves
			// behind the others.
			text *key = lane.keyed && HasKeyLimits(settings) ? KeyOfLane(lane_id) : NULL;
			KeyAllowance a{NULL, charged, charged, false};
			if (key != NULL) {
				a = AllowKey(request, settings, key, charged);
				if (a.granted == 0 && a.by_running) {
					// Blocked, then looked at again without reserving: a room
					// freed before the block is seen here, one freed after it
					// unblocks (key_limits.hpp). (A second reservation would
					// not do: two claims doing it at once can each see the
					// other's and both stay blocked, with room and no end to
					// come: found from outside.)
					(void)SettleKey(settings, a, 0);
					bool left = BlockKeyedPick(keyed, lane_id, charged, key);
					if (RoomNow(a.name, settings.key_max_running) > 0) {
						UnblockKeyedLane(keyed, lane_id);
						left = false;
					}
					if (!left)
						fruitless_lanes[fruitless++] = lane_id;
					continue;
				}
			}
			if (a.granted > 0) {
				request->max_jobs = a.granted;
				bool unsure = request->unsure;
				request->unsure = false;
				claimed = ClaimFromLaneLocked(request, lane, ring, &exhausted, &last_job_id, !waited);
				waited = waited || request->unsure;  // busy: waited for (or not allowed to)
				request->unsure = request->unsure || unsure;
				request->max_jobs = want;
			} else {
				exhausted = false;  // out of key tokens: its jobs stay
			}
			if (key != NULL) {
				// Room given back may have held other claims' picks of the
				// key: its lanes come back now, and at this transaction's
				// end (an abort gives the rest back).
				if (SettleKey(settings, a, claimed))
					UnblockKeyLanesNow(request->queue, key);
				if (claimed > 0 && settings.key_max_running > 0)
					UnblockKeyLanesAtEnd(request->queue, key);
			}
		}
		SettleKeyedPick(keyed, lane_id, charged, claimed, exhausted, activations, last_job_id + 1);
		if (claimed > 0)
			return claimed;
		if (!exhausted)
			fruitless_lanes[fruitless++] = lane_id;
	}
	// Keys out of their rate's tokens: a waiting claim looks again when the
	// first of them gets one.
	int64 token_wait = settings.key_rate_count > 0 ? KeyedTokenWait(keyed) : 0;
	if (token_wait > 0 && (request->retry_after_micros == 0 || token_wait < request->retry_after_micros))
		request->retry_after_micros = token_wait;
	// Stuck picks: the priority's other lanes in turn (the lane without a
	// key among them).
	if (stuck || fruitless == kMaxKeyedPicks)
		return ClaimFromEveryLane(request, settings, priority, fruitless_lanes, fruitless, &keyed);
	// The lane of jobs without a key is looked at directly when the picks
	// found nothing: its jobs' commit makes it a member only when the
	// priority had a scheduler already (key_lanes.hpp); one made meanwhile,
	// from the committed lanes, may not know it (a lane created by a
	// transaction still open then). Found from outside: such a job stayed
	// unclaimed for good.
	if (unkeyed != NULL) {
		LaneCursors cursors = ReadLaneCursors(*unkeyed);
		if (cursors.claim < cursors.enqueue) {
			RingPositions ring = CurrentRings(&epoch);
			bool exhausted;
			int claimed = ClaimFromLaneLocked(request, *unkeyed, ring, &exhausted, NULL, !waited);
			if (claimed > 0 && !exhausted)
				ActivateKeyedLane(keyed, unkeyed->lane_id);
			return claimed;
		}
	}
	return 0;
}

// One look for work over the queue's lanes (ClaimOnce), up to max_jobs.
int
ClaimFromLanes(ClaimRequest *request, const QueueSettings &settings, TimestampTz now)
{
	Lane lanes[kMaxLanesPerQueue];
	int lane_count = LanesOfQueue(request->queue, lanes);
	if (uint8 keyed = KeyedPriorities(request->queue)) {
		// Priorities in order, strictly (no aging in a queue with keyed
		// jobs); in a keyed priority the lane of jobs without a key is one
		// of the scheduler's members, and also looked at directly when the
		// picks find nothing.
		for (int16 priority = 1; priority <= kMaxLanesPerQueue; priority++) {
			int claimed = 0;
			if (keyed & (1u << (priority - 1))) {
				const Lane *unkeyed = NULL;
				for (int i = 0; i < lane_count; i++)
					if (lanes[i].priority == priority)
						unkeyed = &lanes[i];
				claimed = ClaimFromKeyedPriority(request, settings, priority, unkeyed);
			} else {
				for (int i = 0; i < lane_count; i++) {
					if (lanes[i].priority != priority)
						continue;
					LaneCursors cursors = ReadLaneCursors(lanes[i]);
					if (cursors.claim >= cursors.enqueue)
						continue;
					int64 epoch;
					RingPositions ring = CurrentRings(&epoch);
					bool exhausted;
					claimed = ClaimFromLaneLocked(request, lanes[i], ring, &exhausted);
				}
			}
			if (claimed > 0)
				return claimed;
		}
		return 0;
	}
	LaneOrder order[kMaxLanesPerQueue];
	int candidates = 0;
	for (int i = 0; i < lane_count; i++) {
		// Cheap check first: an empty lane costs two sequence reads.
		LaneCursors cursors = ReadLaneCursors(lanes[i]);
		if (cursors.claim >= cursors.enqueue)
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
			order[i].head = LaneHeadRunAt(request->queue, lanes[order[i].index], ring, now);
			order[i].effective =
			    awa::core::EffectivePriority(lanes[order[i].index].priority, now - order[i].head, settings.aging_micros);
		}
		qsort(order, candidates, sizeof(LaneOrder), CompareLaneOrder);
	}
	// First pass: the lanes no other claimer is planning. Second pass, when
	// that found nothing: wait for the busy ones in turn, each at most
	// awa.lane_wait_timeout. A claimer holds a lane only while it plans
	// (microseconds; the in-flight registry takes over), so a claim returns
	// empty only when no lane has claimable work. A transaction that keeps a
	// lane lock until it ends never waits for another lane (no cycle).
	bool busy[kMaxLanesPerQueue] = {false};
	int busy_count = 0;
	bool may_wait = awa_lane_wait_timeout_ms > 0 && keeps_lane_lock != MyProc->lxid;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < candidates; i++) {
			const Lane &lane = lanes[order[i].index];
			if (pass == 0) {
				if (!TryLockLaneClaim(lane.lane_id)) {
					busy[i] = true;
					busy_count++;
					continue;
				}
			} else {
				if (!busy[i])
					continue;
				if (!LockLaneClaimWithin(lane.lane_id, awa_lane_wait_timeout_ms)) {
					request->unsure = true;
					continue;
				}
			}
			if (!have_ring) {
				int64 epoch;
				ring = CurrentRings(&epoch);
				have_ring = true;
			}
			bool released;
			int claimed = ClaimFromLane(*request, lane, ring, &released);
			if (!released && claimed == 0)
				UnlockLaneClaim(lane.lane_id);
			if (claimed > 0)
				return claimed;
		}
		if (busy_count > 0 && !may_wait)
			request->unsure = true;
		if (busy_count == 0 || !may_wait)
			break;
	}
	return 0;
}

// One look for work: claims up to max_jobs from the first lane, most urgent
// first, that yields any, and no more than the queue's rate limit has tokens
// for and its concurrency limit leaves room for (rate limits: counters.hpp,
// TakeRateTokens; concurrency: running_limits.hpp). Returns the number of
// jobs emitted.
int
ClaimOnce(ClaimRequest *request, TimestampTz now)
{
	request->unsure = false;
	request->retry_after_micros = 0;
	QueueSettings settings = SettingsOf(request->queue);
	if (settings.paused)
		return 0;
	if (request->deadline == NULL) {
		// The queue's default deadline, else five minutes.
		request->deadline = static_cast<Interval *>(MemoryContextAllocZero(request->keep, sizeof(Interval)));
		if (settings.has_deadline)
			*request->deadline = settings.deadline;
		else
			request->deadline->time = 5 * 60 * USECS_PER_SEC;
	}

	if (settings.max_running <= 0 && settings.rate_count <= 0)
		return ClaimFromLanes(request, settings, now);
	// Nothing to claim: no reservation and no token (an idle poll of a
	// limited queue costs one more read of its lane cursors).
	Lane lanes[kMaxLanesPerQueue];
	int lane_count = LanesOfQueue(request->queue, lanes);
	bool work = KeyedPriorities(request->queue) != 0;  // keyed lanes: looked at by the claim itself
	for (int i = 0; i < lane_count && !work; i++) {
		LaneCursors cursors = ReadLaneCursors(lanes[i]);
		work = cursors.claim < cursors.enqueue;
	}
	if (!work)
		return 0;
	int want = request->max_jobs;
	// The rate limit first (counters.hpp, TakeRateTokens): tokens for at most `want`.
	int tokens = want;
	if (settings.rate_count > 0) {
		RateLimit limit{settings.rate_count, settings.rate_period_micros, settings.rate_burst, settings.rate_set_at};
		int64 wait_micros;
		tokens = TakeRateTokens(request->queue, limit, want, &wait_micros);
		if (tokens <= 0) {
			// Out of tokens (a waiting claim looks again when the next one
			// comes); or no counters entry to keep the bucket in: no claim.
			request->retry_after_micros = tokens < 0 ? 0 : wait_micros;
			return 0;
		}
	}
	// Then the concurrency limit (running_limits.hpp).
	int granted = tokens;
	if (settings.max_running > 0)
		granted = ReserveRunning(request->queue, settings.max_running, tokens);
	int claimed = 0;
	if (granted > 0) {
		request->max_jobs = granted;
		claimed = ClaimFromLanes(request, settings, now);
		request->max_jobs = want;
		if (settings.max_running > 0)
			ReturnRunning(request->queue, granted - claimed);
	}
	// (At the concurrency limit a waiting claim is woken when an attempt ends.)
	if (settings.rate_count > 0)
		ReturnRateTokens(tokens - claimed, settings.rate_burst);
	return claimed;
}

// One look for work in an internal subtransaction: when it finds nothing,
// the subtransaction rolls back, so every lock it took (lanes, ring slots,
// sequences) is released before the caller sleeps, and the look's memory
// (`scratch`, reset) does not pile up over a long wait. An error rolls the
// subtransaction back and is raised again, as PL/pgSQL's exception blocks do.
int
ClaimOnceReleasingLocks(ClaimRequest *request, TimestampTz now, MemoryContext scratch)
{
	int claimed = RunInSubtransaction(scratch, true, [request, now]() { return ClaimOnce(request, now); });
	if (claimed == 0)
		MemoryContextReset(scratch);
	return claimed;
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa.claim(queue, max_jobs, deadline, wait, async_commit) -> SETOF jobs
AWA_FUNCTION(awa_claim)
{
	ClaimRequest request;
	request.queue = QueueArgument(fcinfo, 0);
	request.max_jobs = MaxJobsArgument(fcinfo, 1);
	request.deadline = PG_ARGISNULL(2) ? NULL : PG_GETARG_INTERVAL_P(2);
	TimestampTz now = GetCurrentTimestamp();
	if (request.deadline != NULL)
		CheckClaimDeadline(request.deadline, now);
	int64 wait_micros = ClaimWaitMicros(PG_NARGS() > 3 && !PG_ARGISNULL(3) ? PG_GETARG_INTERVAL_P(3) : NULL, now);
	// Jobs this transaction enqueued are claimable by it, as they were when
	// an enqueue appended them at once.
	FlushPendingEnqueues();
	// A claim sees the lanes and settings that other transactions committed
	// before it began (a new lane, a resumed queue), as a READ COMMITTED
	// statement sees their rows: the invalidations that empty the
	// per-backend caches of both (lanes.cpp, queue_settings.cpp) are taken
	// now, not at this transaction's next new lock, which a claim inside a
	// transaction block that has locked everything already never takes
	// (a new keyed lane's committed job was passed over for a less urgent
	// lane; found by test/t/012_model_stress.pl, seed 681389946).
	AcceptInvalidationMessages();
	request.wake_bucket = QueueWakeBucket(request.queue);
	request.waiting = wait_micros > 0;
	request.unsure = false;
	request.retry_after_micros = 0;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	request.rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

	// A claim that is its own transaction does not wait for its WAL flush
	// while it holds the lane (docs/architecture.md, "Asynchronous claim
	// commit"); inside a client's transaction block the client's setting stands.
	// async_commit NULL: the session's awa.async_claim_commit (a per-call
	// choice needs no SET, so it works through transaction poolers).
	bool async_commit = PG_NARGS() > 4 && !PG_ARGISNULL(4) ? PG_GETARG_BOOL(4) : awa_async_claim_commit;
	if (async_commit && !IsTransactionBlock())
		(void)set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0,
		                        false);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	request.keep = CurrentMemoryContext;
	if (wait_micros == 0) {
		(void)ClaimOnce(&request, now);
		SPI_finish();
		return (Datum)0;
	}
	// A claim that waits (docs/sql-reference.md, awa.claim): look, and while
	// nothing was found and time is left, sleep until an event of the
	// queue's wake bucket (wakeups.hpp) that came after the look began.
	TimestampTz until = now + wait_micros;
	MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext, "awa claim look", ALLOCSET_DEFAULT_SIZES);
	for (;;) {
		// The sleep checks for interrupts too; an error here or there ends
		// the wait registration with the transaction (claim_waiters.hpp).
		CHECK_FOR_INTERRUPTS();
		uint64 seen = QueueWakeEvents(request.wake_bucket);
		if (ClaimOnceReleasingLocks(&request, now, scratch) > 0)
			break;
		now = GetCurrentTimestamp();
		if (now >= until)
			break;
		// After an unsure look, sleep no longer than a lane hole's proof
		// may wait, then look again.
		int64 nap = until - now;
		if (request.unsure)
			nap = Min(nap, int64{Max(awa_gap_proof_lock_timeout_ms, 1)} * 1000);
		if (request.retry_after_micros > 0)
			nap = Min(nap, request.retry_after_micros);
		BeginClaimWait(request.queue);
		SleepWithoutSnapshot(fcinfo->flinfo->fn_oid, request.wake_bucket, seen, nap);
		now = GetCurrentTimestamp();
		// Settings (a paused queue resumed) and lanes (a new one) may have
		// changed, and the invalidations of the transaction that woke this
		// claim may not be out yet: read both afresh.
		AcceptInvalidationMessages();
		InvalidateCatalogSnapshot();
		ForgetCachedLanes();
		ForgetCachedSettings();
	}
	EndClaimWait();
	SPI_finish();
	return (Datum)0;
}
