// callbacks.cpp: see callbacks.hpp. The order of the calls below is the order
// in which the effects happen; it is the order awa had when each module
// registered its own callbacks (the startup hooks chained in registration
// order, the transaction callbacks called in reverse, as PostgreSQL prepends
// each new one), kept as it was.
//
// Shared memory (request, then startup): the in-flight registry, wakeups,
// claim waiters, lane waits, counters, maintenance, key lanes, the claim
// walks' shared generation floors. Each asks for its own
// space and LWLock tranche and sets up its own structure; none reads
// another's, so the order only fixes where each lands in the shared memory segment.
//
// Transaction events, in this order:
//  0. The pending enqueues (pending_enqueues.hpp): PRE_COMMIT appends this
//     transaction's due jobs to their lanes (and may ereport: the transaction
//     then aborts), first, so that everything after sees them as written by
//     this transaction: the enqueue generation it publishes, the lanes it
//     creates, the queues it wakes. Any end forgets them.
//  1. The planner flags (spi_plans.cpp): cleared at every end; they touch
//     nothing else.
//  2. Maintenance, whose four parts ran as one callback, in this order:
//     the ring epoch ends this transaction's rotation (the epoch leaves its
//     odd window), the enqueue generation it published is cleared, its DDL
//     hold is released (which wakes the launcher for the held database),
//     and at commit the launcher is woken if CREATE EXTENSION asked for it.
//  3. The counters: PRE_COMMIT makes the shared entries of queues that have
//     none yet (a move that rolls back takes none; this may raise, out of
//     memory, and the transaction then aborts) and notes the xid; COMMIT
//     applies the pending moves to the shared counters, before 5 and 6, so a session woken by
//     this commit, or free to plan the lanes this claim held, already reads
//     counts that include its moves.
//  4. The claim waiters: an abort clears this backend's waiting slot.
//  5. The wakeups: the queue buckets this transaction marked are broadcast
//     (at commit, and at any end for those marked "at end"), and a late
//     promoting worker's latch is set.
//  6. The in-flight registry, last: it forgets this transaction's lane
//     ranges; after an abort it then wakes the queues' waiting claims itself,
//     once the ranges are gone, so a waiter that 5 woke while they were still
//     registered is woken again.
// PRE_PREPARE is refused by 2 (a rotation; the ring truncations, a prune), 3
// (pending moves), then the key lanes (a concurrency key's weight noted for
// the fair-share scheduler) and 6 (claimed lanes), in that order: the first
// refusal is the error the PREPARE reports.
//
// Subtransaction events: the pending enqueues (an abort drops the
// subtransaction's jobs), the ring epoch (an abort forgets a rotation begun
// in it), the planner flags, the counters (an abort drops the
// subtransaction's moves, a commit folds them into the parent's), the claim
// waiters (an abort at or above the waiting claim's level clears its slot),
// the in-flight registry (an abort forgets its ranges and wakes their queues,
// a commit hands them to the parent).
//
// All of these run in transaction callbacks: plain code that cannot throw;
// the commit-time effects cannot raise either (they only touch shared memory
// under LWLocks and spinlocks). Only the PRE_PREPARE refusals, the pending
// enqueues' PRE_COMMIT and the counters' PRE_COMMIT (entries of new queues)
// ereport.
#include "pg/callbacks.hpp"

#include "pg/claim_head_cache.hpp"
#include "pg/claim_waiters.hpp"
#include "pg/counters.hpp"
#include "pg/ddl_holds.hpp"
#include "pg/enqueue_generations.hpp"
#include "pg/inflight.hpp"
#include "pg/key_lanes.hpp"
#include "pg/lane_locks.hpp"
#include "pg/pending_enqueues.hpp"
#include "pg/maintenance_shmem.hpp"
#include "pg/ring_epoch.hpp"
#include "pg/ring_truncations.hpp"
#include "pg/running_limits.hpp"
#include "pg/spi_plans.hpp"
#include "pg/wakeups.hpp"
#include "pg/worker_registry.hpp"

extern "C" {
#include "storage/ipc.h"
}

namespace awa::pg {

namespace {

// awa is in shared_preload_libraries: the shared memory exists.
bool preloaded = false;
// DispatchEveryTransaction.
bool dispatch_every_transaction = false;
shmem_request_hook_type previous_request_hook = NULL;
shmem_startup_hook_type previous_startup_hook = NULL;

void
RequestShmem()
{
	if (previous_request_hook)
		previous_request_hook();
	RequestInflightShmem();
	RequestWakeupsShmem();
	RequestClaimWaitersShmem();
	RequestLaneWaitsShmem();
	RequestCountersShmem();
	RequestMaintenanceShmem();
	RequestKeyLanesShmem();
	RequestHeadFloorsShmem();
}

void
StartupShmem()
{
	if (previous_startup_hook)
		previous_startup_hook();
	StartupInflightShmem();
	StartupWakeupsShmem();
	StartupClaimWaitersShmem();
	StartupLaneWaitsShmem();
	StartupCountersShmem();
	StartupMaintenanceShmem();
	StartupKeyLanesShmem();
	StartupHeadFloorsShmem();
}

// The events that end a (top-level, or a parallel worker's) transaction.
bool
EndsTransaction(XactEvent event)
{
	return event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_COMMIT ||
	       event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE;
}

void
DispatchTransactionEvent(XactEvent event)
{
	OnPendingEnqueuesTransactionEvent(event);
	OnPlannerTransactionEvent(event);
	OnRingEpochTransactionEvent(event);
	OnRingTruncationTransactionEvent(event);
	if (!preloaded) {
		OnRunningLimitsTransactionEvent(event);
		return;
	}
	OnEnqueueGenerationTransactionEvent(event);
	// After the pending enqueues' PRE_COMMIT flush, which notes lanes.
	OnKeyLanesTransactionEvent(event);
	OnDdlHoldTransactionEvent(event);
	OnWorkerRegistryTransactionEvent(event);
	OnCountersTransactionEvent(event);
	if (event == XACT_EVENT_PRE_PREPARE)
		RefusePrepareWithKeyLaneNotes();
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		OnRateTokensAbort(InvalidSubTransactionId);
	// After the counters: a committed claim's running attempts are applied
	// before its reservation is given back (running_limits.hpp).
	OnRunningLimitsTransactionEvent(event);
	// After the counters and the reservations: a key's room is final by now.
	OnKeyUnblocksTransactionEvent(event);
	OnClaimWaitersTransactionEvent(event);
	OnWakeupsTransactionEvent(event);
	OnInflightTransactionEvent(event);
	// Last: no callback touches a counters entry after it.
	if (EndsTransaction(event))
		EndKeyEntryUse();
}

void
OnTransactionEvent(XactEvent event, void *)
{
	if (!transaction_entered_awa && !dispatch_every_transaction)
		return;
	DispatchTransactionEvent(event);
	if (EndsTransaction(event))
		transaction_entered_awa = false;
}

void
OnSubTransactionEvent(SubXactEvent event, SubTransactionId subtransaction, SubTransactionId parent, void *)
{
	if (!transaction_entered_awa && !dispatch_every_transaction)
		return;
	OnPendingEnqueuesSubTransactionEvent(event, subtransaction, parent);
	OnRingEpochSubTransactionEvent(event, subtransaction, parent);
	OnPlannerSubTransactionEvent(event, subtransaction);
	OnRunningLimitsSubTransactionEvent(event, subtransaction, parent);
	if (!preloaded)
		return;
	OnCountersSubTransactionEvent(event);
	OnKeyLanesSubTransactionEvent(event);
	if (event == SUBXACT_EVENT_ABORT_SUB)
		OnRateTokensAbort(subtransaction);
	OnClaimWaitersSubTransactionEvent(event);
	OnInflightSubTransactionEvent(event);
}

}  // namespace

bool transaction_entered_awa = false;

void
DispatchEveryTransaction()
{
	dispatch_every_transaction = true;
}

void
InstallCallbacks(bool preloading)
{
	preloaded = preloading;
	if (preloading) {
		previous_request_hook = shmem_request_hook;
		shmem_request_hook = RequestShmem;
		previous_startup_hook = shmem_startup_hook;
		shmem_startup_hook = StartupShmem;
	}
	RegisterXactCallback(OnTransactionEvent, NULL);
	RegisterSubXactCallback(OnSubTransactionEvent, NULL);
}

}  // namespace awa::pg
