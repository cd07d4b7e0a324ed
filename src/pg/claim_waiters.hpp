// claim_waiters.hpp: the claims that are waiting for work right now, for
// monitoring (awa.waiting_claims, awa.queue_metrics).
//
// A backend whose awa.claim(..., wait) found nothing and is about to sleep
// publishes its queue and since when in its own slot of shared memory (one
// slot per PGPROC, written only by its owner under the slot's spinlock). The
// slot is cleared when the claim returns, when its (sub)transaction aborts
// (a cancel, a statement_timeout, a termination) and when the backend exits,
// so a slot never outlives its wait. Without shared_preload_libraries nothing
// is published and no claim is listed.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// The startup hooks and the (sub)transaction callbacks, called by
// callbacks.cpp while preloaded: an abort at or above the waiting claim's
// level clears this backend's slot.
void RequestClaimWaitersShmem();
void StartupClaimWaitersShmem();
void OnClaimWaitersTransactionEvent(XactEvent event);
void OnClaimWaitersSubTransactionEvent(SubXactEvent event);

// This backend's waiting claim on `queue` begins (the first sleep of a claim;
// later calls of the same claim keep the first `since`).
void BeginClaimWait(text *queue);
// This backend's waiting claim has ended.
void EndClaimWait();

struct ClaimWaiter {
	int pid;
	char *queue;  // palloc'd
	TimestampTz since;
};
// The waiting claims of this database, in no particular order. May ereport
// (out of memory).
int ListClaimWaiters(ClaimWaiter **out);

}  // namespace awa::pg
