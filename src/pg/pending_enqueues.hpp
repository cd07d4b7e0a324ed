// pending_enqueues.hpp: the ready jobs a transaction enqueued, held in its
// memory until it commits (docs/architecture.md §2, "Lane positions are taken
// at commit").
//
// An enqueue checks its job, draws its job_id, takes its unique key, counts it
// and, for a job due now, hands it here instead of appending it to its lane.
// At PRE_COMMIT every pending job is appended: its lane is found or created,
// its lane_seq reserved and its ready row inserted, all in the
// committing transaction. A lane position is therefore held only from PRE_COMMIT
// until the commit ends (a WAL flush), never while the producer's transaction
// stays open: claims pass nothing, new lanes make no other producer wait, and
// an idle producer keeps no ready row in any ring slot.
//
// Jobs are appended early (and their positions held until commit, as before)
// only when this transaction reads its own jobs back through awa (awa.claim,
// awa.get_job, awa.list_jobs, awa.cancel, awa.move_jobs, awa.set_priority,
// awa.retry_jobs, awa.bulk_count, awa.queue_counts_exact, awa.run_maintenance
// and a ring rotation call FlushPendingEnqueues first, the SQL ones through
// awa._flush_enqueues; and awa.bulk_step through the cancel, retry and move
// calls it makes; awa.queue_metrics and the awa.lanes view do not, and do not
// show them), or when kMaxPendingJobs or more jobs or kMaxPendingBytes or more
// bytes are pending (a bulk load: memory per transaction stays bounded).
#pragma once

#include "pg/job_insert.hpp"

namespace awa::pg {

constexpr int kMaxPendingJobs = 10000;
constexpr int64 kMaxPendingBytes = 64 * 1024 * 1024;

// Keeps copies of rows[order[0..n)) (due jobs of one lane, in lane order) for
// this transaction's commit. May flush (above), so requires SPI like
// InsertJobs. May ereport.
void DeferReadyRows(const JobRow *rows, const int *order, int n);

// Asks for row's lane (queue, priority) to exist at commit: the lane of a
// scheduled job, whose deferred row the caller has written. May flush.
void DeferLane(const JobRow &row);

// Appends every pending job now, in the order they were enqueued per lane,
// and returns how many. Connects to SPI itself. May ereport.
int FlushPendingEnqueues();

// Transaction events (callbacks.cpp): PRE_COMMIT flushes (and may ereport;
// the transaction then aborts); COMMIT and ABORT forget; a subtransaction's
// abort drops the jobs it enqueued (and unwrites older ones it wrote), its
// commit hands what it wrote to its parent.
void OnPendingEnqueuesTransactionEvent(XactEvent event);
void OnPendingEnqueuesSubTransactionEvent(SubXactEvent event, SubTransactionId subtransaction,
                                     SubTransactionId parent);

}  // namespace awa::pg
