// job_options.hpp: the `opts` of an enqueued job: metadata, tags and
// uniqueness.
//
//   {"metadata": {...}, "tags": ["a", "b"],
//    "unique": {"by_args": true, "by_queue": false, "period": "1 hour",
//               "states": ["available", "scheduled", "retryable", "running"],
//               "on_conflict": "error"},
//    "unique_key": "order-42",
//    "concurrency_key": "tenant-42"}
//
// A unique job's key is a SHA-256 digest of its kind, its queue (by_queue,
// default false), its args (by_args, default true) and the start of the
// current period (when a period is given), or of `unique_key` when that is
// given. `states` (default: available, scheduled, retryable, running) are the
// states in which the job blocks duplicates; they must include those four
// (docs/lifecycle.md explains why). `on_conflict` says what a duplicate does:
// "error" (the default) raises 23505, "skip" returns the holder's job_id and
// writes nothing. `concurrency_key` (1 to 255 bytes) puts the job into its
// key's lane (key_lanes.hpp); it is kept in the stored payload, where every
// later insertion of the job (promotion, DLQ retry) reads it. Bad options
// raise 22023 with a hint.
//
// The job's size is checked here too, because only here is its stored payload
// known: args plus payload, as stored uncompressed (VARSIZE of each; O(1)),
// must not exceed awa.max_job_bytes, else 54000 with a hint. The check comes
// after the options are validated and before the unique key is hashed (which
// reads the whole args when by_args).
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

struct JobOptions {
	Jsonb *payload;       // metadata and tags to store; NULL when none
	bytea *unique_key;    // NULL: not unique
	int16 unique_states;  // state mask (core/lifecycle.hpp)
	bool unique_skip;     // unique.on_conflict = "skip"
	int64 bytes;          // the job's size: args plus payload (checked)
};

// `opts` may be NULL (no options; the size is still checked). `where` names
// the argument in messages ("opts", "opts[3]"); `job` is 0 for a single job,
// else the 1-based element of enqueue_many, named "jobs[job]" in a size error.
// `args` must be detoasted (as PG_GETARG_JSONB_P and DatumGetJsonbP return it).
JobOptions ParseJobOptions(Jsonb *opts, const char *where, int job, text *kind, text *queue, Jsonb *args,
                           TimestampTz now);

// The job's concurrency key as stored in its payload (ParseJobOptions keeps
// it there), palloc'd; NULL when it has none.
text *ConcurrencyKeyOf(Jsonb *payload);

}  // namespace awa::pg
