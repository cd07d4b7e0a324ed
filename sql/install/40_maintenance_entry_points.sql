-- ---------------------------------------------------------------------------
-- Maintenance (docs/maintenance.md). The background worker runs each step in
-- its own transaction; awa.run_maintenance runs them by hand in the caller's.
-- Ring steps never wait for a lock: one transaction-level try-lock serializes
-- them per database, and ACCESS EXCLUSIVE on a slot is bounded by
-- awa.prune_lock_timeout.
-- ---------------------------------------------------------------------------
-- The receipt id of a claim batch's index in a claim slot (the layout of
-- src/core/receipt.hpp: one source for C and SQL).
CREATE FUNCTION awa._receipt(batch_id bigint, index int, slot int)
RETURNS bigint AS 'MODULE_PATHNAME', 'awa_internal_receipt' LANGUAGE C IMMUTABLE;
-- Ring arithmetic, from src/core (one source for C and SQL): the slot of a
-- generation, the oldest generation a ring at `current` still holds, and the
-- generation its next prune targets (-1 while the ring has not filled).
CREATE FUNCTION awa._slot_of(generation bigint, slot_count int)
RETURNS int AS 'MODULE_PATHNAME', 'awa_internal_slot_of' LANGUAGE C IMMUTABLE STRICT;
CREATE FUNCTION awa._oldest_live_generation(current bigint, slot_count int)
RETURNS bigint AS 'MODULE_PATHNAME', 'awa_internal_oldest_live_generation' LANGUAGE C IMMUTABLE STRICT;
CREATE FUNCTION awa._prune_target(current bigint, slot_count int)
RETURNS bigint AS 'MODULE_PATHNAME', 'awa_internal_prune_target' LANGUAGE C IMMUTABLE STRICT;
-- The batch_id range of a claim batch's closure (and completion) batches,
-- from src/core/receipt.hpp (one source for C and SQL): every lookup of a
-- claim batch's closures is batch_id BETWEEN these two.
CREATE FUNCTION awa._first_closure_batch_id(claim_batch_id bigint)
RETURNS bigint AS 'MODULE_PATHNAME', 'awa_internal_first_closure_batch_id' LANGUAGE C IMMUTABLE STRICT;
CREATE FUNCTION awa._last_closure_batch_id(claim_batch_id bigint)
RETURNS bigint AS 'MODULE_PATHNAME', 'awa_internal_last_closure_batch_id' LANGUAGE C IMMUTABLE STRICT;
-- The claim batch a closure or completion batch is keyed under (neither row
-- stores it again: 8 bytes of WAL each).
CREATE FUNCTION awa._claim_batch_of_closure(closure_batch_id bigint)
RETURNS bigint AS 'MODULE_PATHNAME', 'awa_internal_claim_batch_of_closure' LANGUAGE C IMMUTABLE STRICT;
-- The lane positions of a claim batch or completion receipt: lane_seqs, or
-- when NULL first_lane_seq, first_lane_seq + 1, ... (count of them), the form
-- both rows store consecutive positions in (04_queue_ring.sql, 05_claim_ring.sql).
CREATE FUNCTION awa._lane_positions(first_lane_seq bigint, count int, lane_seqs bigint[])
RETURNS bigint[] AS 'MODULE_PATHNAME', 'awa_internal_lane_positions' LANGUAGE C IMMUTABLE;
-- The job ids of a claim batch: job_ids, or when NULL first_job_id,
-- first_job_id + 1, ... (count of them), the same form (05_claim_ring.sql).
CREATE FUNCTION awa._claim_job_ids(first_job_id bigint, count int, job_ids bigint[])
RETURNS bigint[] AS 'MODULE_PATHNAME', 'awa_internal_claim_job_ids' LANGUAGE C IMMUTABLE;
-- Summarizes the completion receipts' BRIN ranges that filled since the last
-- pass, in every queue slot (src/pg/fn_summarize_receipts.cpp); the queue
-- prune runs it. Returns the number of ranges summarized.
CREATE FUNCTION awa._summarize_receipts()
RETURNS int AS 'MODULE_PATHNAME', 'awa_internal_summarize_receipts' LANGUAGE C VOLATILE;
CREATE FUNCTION awa._task_names()
RETURNS text[] AS 'MODULE_PATHNAME', 'awa_internal_task_names' LANGUAGE C IMMUTABLE;
-- Every outcome a step may report (src/core/maintenance_outcome.cpp, the one
-- list); awa._note_outcome refuses any other word.
CREATE FUNCTION awa._outcome_names()
RETURNS text[] AS 'MODULE_PATHNAME', 'awa_internal_outcome_names' LANGUAGE C IMMUTABLE;
CREATE FUNCTION awa._rotation_begin()
RETURNS void AS 'MODULE_PATHNAME', 'awa_internal_rotation_begin' LANGUAGE C VOLATILE;

CREATE FUNCTION awa._enqueue_generation_in_use(generation bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'awa_internal_enqueue_generation_in_use' LANGUAGE C VOLATILE;

-- Whether the queue ring's current generation holds only what prunes carried
-- into it, from shared memory (src/pg/enqueue_generations.hpp): a rotation
-- notes the generation it enters, an enqueue the one it writes into, a claim
-- the one it writes evidence into.
CREATE FUNCTION awa._queue_generation_entered(generation bigint)
RETURNS void AS 'MODULE_PATHNAME', 'awa_internal_queue_generation_entered' LANGUAGE C VOLATILE;
CREATE FUNCTION awa._queue_generation_may_hold_enqueues(generation bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'awa_internal_queue_generation_may_hold_enqueues' LANGUAGE C VOLATILE;
CREATE FUNCTION awa._queue_generation_may_hold_claims(generation bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'awa_internal_queue_generation_may_hold_claims' LANGUAGE C VOLATILE;

CREATE FUNCTION awa._note_outcome(task text, outcome text)
RETURNS void AS 'MODULE_PATHNAME', 'awa_internal_note_outcome' LANGUAGE C VOLATILE;

CREATE FUNCTION awa._ensure_counters()
RETURNS text AS 'MODULE_PATHNAME', 'awa_internal_ensure_counters' LANGUAGE C VOLATILE;

-- The counters task's pass over key entries (src/pg/counters.cpp, "Freeing
-- idle key entries"): {"key_entries_live": n, "key_entries_retired": n,
-- "key_entries_freed": n}.
CREATE FUNCTION awa._free_key_entries()
RETURNS jsonb AS 'MODULE_PATHNAME', 'awa_internal_free_key_entries' LANGUAGE C VOLATILE;

CREATE FUNCTION awa._wake_launcher()
RETURNS void AS 'MODULE_PATHNAME', 'awa_internal_wake_launcher' LANGUAGE C VOLATILE;

CREATE FUNCTION awa._advance_cursors()
RETURNS int AS 'MODULE_PATHNAME', 'awa_internal_advance_cursors' LANGUAGE C VOLATILE;

CREATE FUNCTION awa._rescue_attempt(job_id bigint, run_lease bigint, receipt_id bigint, stale_before timestamptz)
RETURNS text AS 'MODULE_PATHNAME', 'awa_internal_rescue_attempt' LANGUAGE C VOLATILE;

-- The last outcome of every maintenance task in this database.
CREATE FUNCTION awa.maintenance_status()
RETURNS TABLE (task text, last_outcome text, last_run_at timestamptz, runs bigint, errors bigint,
               prune_backoff_level int, prune_ticks_skipped int, worker_pid int)
AS 'MODULE_PATHNAME', 'awa_maintenance_status'
LANGUAGE C VOLATILE SECURITY DEFINER;


