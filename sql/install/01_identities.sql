-- ---------------------------------------------------------------------------
-- Identities
-- ---------------------------------------------------------------------------
CREATE SEQUENCE awa.job_id_seq;
CREATE SEQUENCE awa.queue_lane_id_seq;
-- One id per claim batch (a claim call writes a batch per queue-ring
-- generation it takes jobs from): shared by the batch's
-- ready_claim_attempt_batches row and its lease_claim_batches row, and encoded
-- in every receipt id it hands out.
CREATE SEQUENCE awa.claim_batch_id_seq;
-- The server run (start, crash restart or promotion) that last moved
-- claim_batch_id_seq past every id an earlier run may have handed out in a
-- claim lost with its unflushed WAL (src/pg/claim_fence.hpp): the same receipt
-- id is never handed out twice, so a lost claim's worker is refused.
CREATE SEQUENCE awa.claim_fence_seq MINVALUE 0 START 0;
-- Ring epoch (a seqlock): a rotation bumps it to an odd value before it appends
-- to a rotation ledger and to an even value after that commit. An enqueue that
-- reads the same even epoch before and after reserving its lane_seq knows the
-- ring position it cached for that epoch held at the reservation instant, so
-- ready generations never decrease along a lane (docs/architecture.md).
CREATE SEQUENCE awa.ring_epoch_seq MINVALUE 0 START 1;

