// running_limits.hpp: a queue's concurrency limit (awa.configure_queue,
// max_running; docs/flow-control.md): at most that many attempts of the queue
// run at any instant, over every worker and session.
//
// A claim of a limited queue reserves attempts before it plans a lane, under
// the queue's limit lock (an advisory-type lock, lane_locks.hpp), which every
// reservation of the queue takes: the reservation sees every other one. It
// grants min(want, limit - running - in flight), where running is the
// committed running attempts and in flight the reservations of claims that
// have not ended:
//  - with trusted counters (counters.hpp), running is the counters' count and
//    in flight their claims_in_flight; the lock is released at once;
//  - otherwise running is counted exactly, with a snapshot taken after in
//    flight was read (a claim takes its reservation off only after its commit
//    is visible, so none is missed); without an entry for the queue (no
//    preload, more queues than the counters hold) in flight is unknown and
//    the lock is kept until the transaction ends, so the claims of the queue
//    follow one another.
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
