-- awa 0.6: a job queue that lives inside PostgreSQL.
--
-- Storage follows the awa 0.6 queue-storage engine (docs/architecture.md):
--   queue ring  (ready_slot) : ready_entries, ready_tombstones,
--                              ready_claim_attempt_batches, done_entries,
--                              receipt_completion_batches
--   claim ring  (claim_slot) : lease_claims, lease_claim_batches,
--                              lease_claim_closures, lease_claim_closure_batches
--   lease ring  (lease_slot) : leases
--   plain                    : attempt_state, deferred_jobs, dlq_entries
--   control                  : queue_lanes (a lane's cursors live in its row), ring state,
--                              rotation ledgers and slot tables
-- Hot-path rows are inserted once and never updated or deleted by enqueue,
-- claim or completion; rings are reclaimed whole by TRUNCATE.
--
-- Tables written on the hot path (ready_*, lease_claim_batches,
-- lease_claim_closure_batches, receipt_completion_batches) carry no CHECK
-- constraints: PostgreSQL 15 re-parses and compiles every CHECK expression for
-- each INSERT statement, which was 7 % of the CPU of a claim/complete loop.
-- Their invariants (array lengths equal the counts, ranges non-empty, known
-- outcomes) are kept by the C++ code and verified by the tests.

\echo Use "CREATE EXTENSION awa" to load this file. \quit

