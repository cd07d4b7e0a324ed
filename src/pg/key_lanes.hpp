// key_lanes.hpp: which lane of a queue's priority a claim takes when the
// queue has keyed jobs (opts.concurrency_key; docs/flow-control.md, "Fair share
// between keys").
//
// A keyed job goes into its key's own lane, (queue, priority, key). For each
// (queue, priority) that has keyed lanes, shared memory holds a key scheduler
// (core/key_scheduler.hpp) whose members are the lanes of that priority with
// work, the lane of jobs without a key included (as a key of weight 1). A
// claim picks the member first in order (fairness 'key': the smallest pass,
// so keys that all have work get claims in proportion to their weights;
// 'none': the lane whose work arrived first), claims from it, and charges it
// what it took. O(log keys) a claim, whatever the number of keys.
//
// Membership: an enqueue's commit (after it is visible) activates the lanes
// it appended to; a claim that finds its lane empty (not merely stopped at a
// hole it could not prove dead: fn_claim.cpp) deactivates it, unless an
// activation came since it picked (DeactivateIfUnchanged); the abort of a
// claim that took jobs activates its lanes again (their jobs are claimable
// again). The scheduler is made at the first claim or enqueue commit that
// needs it after the server starts (or the extension is created), and built
// from the lanes whose claim cursor is behind their enqueue cursor: nothing of
// it is kept across a restart but the weights (awa.key_weights), and building
// it again loses no work. A spurious member costs one empty walk.
//
// Bounded: awa.max_keyed_queues schedulers in all (a database takes at most
// half), each for awa.max_keys_per_queue lanes with work; an enqueue whose
// commit would give one more lane work than that is refused (53200) at its
// PRE_COMMIT. Without a scheduler (no shared_preload_libraries, the table
// full) a claim looks at every lane of the priority (KeyedLanesUnscheduled).
#pragma once

#include "pg/lanes.hpp"
#include "pg/postgres_headers.hpp"

#include <type_traits>

namespace awa::pg {

void RequestKeyLanesShmem();
void StartupKeyLanesShmem();
void OnKeyLanesTransactionEvent(XactEvent event);
// At PRE_PREPARE, after the counters (callbacks.cpp): refuses PREPARE while
// this transaction holds notes for the fair-share scheduler. Only a key's
// weight gets here: an enqueue or a claim that noted a lane moved jobs, and
// the counters refused it first.
void RefusePrepareWithKeyLaneNotes();
void OnKeyLanesSubTransactionEvent(SubXactEvent event);

// An enqueue appended jobs to `lane` of (queue, lane.priority); `key` is its
// concurrency key (NULL: the lane of jobs without a key), `head_job_id` the
// first job appended. The lane becomes a member at this transaction's commit
// when its priority has a scheduler (or is keyed: then one is made). Requires
// SPI (reads the key's weight). May ereport.
void NoteLaneWork(text *queue, const Lane &lane, text *key, int64 head_job_id);

// A claim's handle on the scheduler of (queue, priority).
struct KeyedPriority {
	int slot;  // -1: no scheduler (claims look at every lane)
	uint64 generation;
	text *queue;
	int16 priority;
};
static_assert(std::is_trivially_destructible_v<KeyedPriority>, "lives across PostgreSQL errors");

// The scheduler of (queue, priority), made and built when missing; slot -1
// when none can be had. `fair`: the queue's fairness setting. Requires SPI.
// May ereport.
KeyedPriority OpenKeyedPriority(text *queue, int16 priority, bool fair);

// The member first in order, charged `want` jobs at most: *lane_id, and the
// jobs charged (0: no member). *activations is for SettleKeyedPick.
int PickKeyedLane(const KeyedPriority &priority, int want, int64 *lane_id, uint32 *activations);

// After the claim from the picked lane: `claimed` of the `charged` jobs taken;
// `exhausted`: the claim's walk saw no claimable job left in the lane (it is
// deactivated unless activated since); `next_head`: above the highest job_id
// claimed (the lane's place in first-come order). A lane that took jobs is
// activated again if this (sub)transaction aborts.
void SettleKeyedPick(const KeyedPriority &priority, int64 lane_id, int charged, int claimed, bool exhausted,
                     uint32 activations, int64 next_head);

// Makes `lane_id` a member (a claim found work in a lane the scheduler did
// not know). Cannot fail.
void ActivateKeyedLane(const KeyedPriority &priority, int64 lane_id);

// A cancel tombstoned a job of `lane`: if this (sub)transaction aborts, the
// job is claimable again and the lane a member again. May ereport.
void NoteLaneHeld(text *queue, const Lane &lane);

// The lanes of (queue, priority), keyed or not, for a claim without a
// scheduler: palloc'd, returns how many. Requires SPI. May ereport.
int LanesOfPriority(text *queue, int16 priority, Lane **lanes);

// Limits per key (key_limits.hpp). A pick refused by its key's limit gives
// its charge back and leaves the scheduler until unblocked (by the lane, or
// by the key: UnblockKeyLanes*).
// True when the lane left the scheduler (false: the scheduler is gone).
bool BlockKeyedPick(const KeyedPriority &priority, int64 lane_id, int charged, text *key);
void UnblockKeyedLane(const KeyedPriority &priority, int64 lane_id);
// The blocked lanes of `key` of `queue` (every priority) come back now, or at
// this transaction's end (after its counters and reservations: callbacks.cpp,
// OnKeyUnblocksTransactionEvent). No SPI. May ereport (out of memory).
void UnblockKeyLanesNow(text *queue, text *key);
void UnblockKeyLanesAtEnd(text *queue, text *key);
void OnKeyUnblocksTransactionEvent(XactEvent event);
// The queue's limits per key as the scheduler needs them: the key rate
// (rate_count 0: none; each lane's bucket in the scheduler, so that a key
// out of tokens is not picked until its next one), and key_max_running,
// whose change brings every blocked lane back. Cannot fail.
void ApplyKeyLimits(const KeyedPriority &priority, int32 key_max_running, int64 rate_count, int64 rate_period_micros,
                    int32 rate_burst);
// How long until a key of the scheduler out of rate tokens gets one (0: none
// waits). Cannot fail.
int64 KeyedTokenWait(const KeyedPriority &priority);

// set_key_weight: the weight applies to the key's lanes at commit. Requires
// SPI. May ereport.
void NoteKeyWeight(text *queue, text *key, int32 weight);

}  // namespace awa::pg
