// running_limits.hpp: a queue's concurrency limit (awa.configure_queue,
// max_running; docs/flow-control.md): at most that many attempts of the queue
// run at any instant, over every worker and session.
//
// A claim of a limited queue with work reserves attempts before it plans a
// lane, optimistically: it adds what it wants to the queue's claims in flight
// (kept next to its counters), then reads the running attempts, then gives
// back what does not fit under the limit. Running is the committed running
// attempts: the counters' count when they are trusted, else an exact count
// with a snapshot taken after the add. Every other reservation either was in
// flight when this one added or adds after it and sees this one; a claim's
// commit counts its attempts as running before they leave the in-flight
// total: so nothing is counted short (two racing claims at worst both give
// back; a claim cut by a reservation given back unused reserves again or is
// woken: running_limits.cpp, WakeIfCut). Without a counters entry for the queue (no preload, more queues than
// the counters hold) the claims of the queue take its limit lock (an
// advisory-type lock, lane_locks.hpp) and count exactly; one that reserves
// keeps it until its transaction ends (they follow one another), one that
// reserves nothing gives it back at once.
// What the claim does not take is given back at once; the rest is given back
// when the transaction ends (after a commit, its running attempts count in
// its place) or when the subtransaction that reserved it aborts. An attempt's
// slot is freed by the commit of whatever ends it (complete, retry, snooze,
// fail, cancel, rescue), when the counters count it no longer running.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// How many of `want` (>= 1) attempts a claim of `queue` may start now under
// `limit` (>= 1); recorded as this (sub)transaction's reservation. Requires
// SPI. May ereport.
int ReserveRunning(text *queue, int32 limit, int want);

// The room under `limit` now, read without reserving (so that two claims
// looking at once never hide the room from each other, as two reservations
// can: key_limits.hpp, the second look of a claim that blocked a key). Too
// much rather than too little. Requires SPI. May ereport.
int64 RoomNow(text *queue, int32 limit);

// Gives back `n` attempts of this transaction's reservation for `queue` (a
// claim that took fewer than it reserved).
void ReturnRunning(text *queue, int n);

// The (sub)transaction callbacks (callbacks.cpp): a transaction's end gives
// back its reservations (after the counters applied its moves at commit), a
// subtransaction's abort those it made, a subtransaction's commit hands its
// own to its parent.
void OnRunningLimitsTransactionEvent(XactEvent event);
void OnRunningLimitsSubTransactionEvent(SubXactEvent event, SubTransactionId subtransaction,
                                        SubTransactionId parent);

}  // namespace awa::pg
