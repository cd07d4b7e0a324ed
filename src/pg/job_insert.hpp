// job_insert.hpp: putting jobs into the queue: ready rows (appended to their
// lane) or deferred rows (future run_at), with their unique keys and counter
// moves. Shared by enqueue, enqueue_many, promotion and DLQ retry.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

struct JobRow {
	int64 job_id;
	text *queue;
	int16 priority;
	text *kind;
	Jsonb *args;
	TimestampTz run_at;
	int64 run_lease;     // of the last emitted attempt (0 for a new job)
	int16 attempt;       // attempts used so far
	int16 max_attempts;
	TimestampTz created_at;
	bytea *unique_key;   // NULL: not unique
	int16 unique_states; // state mask (core/lifecycle.hpp)
	Jsonb *payload;      // metadata, tags, errors, progress; NULL when empty
	text *concurrency_key;  // set by InsertJobs from the payload (ConcurrencyKeyOf); NULL: none
	int from_state;      // counter state the job leaves (kNoState for a new job)
	bool skip_duplicate; // in: a key held by another job skips the row instead of raising 23505
	bool skipped;        // out: skipped as a duplicate; job_id is now the holder's
};

// Claims the unique keys of rows[0..n) (SQLSTATE 23505 when another job holds
// one, unless the row has skip_duplicate: then the row takes the holder's
// job_id, is marked skipped and writes nothing else), then inserts the other
// rows: run_at after `now` into deferred_jobs (scheduled); with kParkPaused,
// the due rows of a paused queue (QueueMayBePaused) into deferred_jobs too
// (available: parked, until awa.resume_queue); the others as ready rows of
// their lanes: at `ready_at` kNow into the current queue slot, one statement
// per lane; at kCommit when this transaction commits (pending_enqueues.hpp).
// Requires SPI. May ereport.
enum class ReadyAt { kNow, kCommit };
enum class Paused { kParkPaused, kAppend };
void InsertJobs(JobRow *rows, int n, TimestampTz now, ReadyAt ready_at, Paused paused = Paused::kParkPaused);

// Appends rows[order[0..n)], due jobs of one lane in lane order, to the lane
// (found or created) in the current queue slot: reserves their lane_seqs and
// inserts their ready rows. Requires SPI. May ereport.
void AppendReadyRows(JobRow *rows, const int *order, int n, TimestampTz now);

}  // namespace awa::pg
