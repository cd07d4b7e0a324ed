-- ---------------------------------------------------------------------------
-- Claim ring family (PARTITION BY LIST (claim_slot)); truncated together.
-- ---------------------------------------------------------------------------
-- Row-local receipts (awa 0.6 shape). This extension writes compact batches
-- (lease_claim_batches) for every claim; the table is part of the ring so that
-- prune proofs and operators see the same family as awa.
CREATE TABLE awa.lease_claims (
    claim_slot       smallint    NOT NULL,
    job_id           bigint      NOT NULL,
    run_lease        bigint      NOT NULL,
    receipt_id       bigint      NOT NULL,
    ready_slot       smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    attempt          smallint    NOT NULL,
    max_attempts     smallint    NOT NULL,
    lane_seq         bigint      NOT NULL,
    claimed_at       timestamptz NOT NULL,
    materialized_at  timestamptz,
    closed_at        timestamptz,
    deadline_at      timestamptz,
    PRIMARY KEY (job_id, run_lease, claim_slot)
) PARTITION BY LIST (claim_slot);

-- Compact receipts: one row per claim call. Receipt ids are not stored: each is
-- (batch_id << 18) | (index << 4) | claim_slot, so a completion finds its claim
-- by one probe of its slot's unique batch_id index (docs/architecture.md, "Receipts").
CREATE TABLE awa.lease_claim_batches (
    claim_slot       smallint    NOT NULL,
    ready_slot       smallint    NOT NULL,
    priority         smallint    NOT NULL,
    claim_generation bigint      NOT NULL,
    batch_id         bigint      NOT NULL,
    ready_generation bigint      NOT NULL,
    lane_id          bigint      NOT NULL,
    first_lane_seq   bigint      NOT NULL,
    queue            text        NOT NULL,
    first_job_id     bigint      NOT NULL,
    deadline_at      timestamptz NOT NULL,
    claimed_at       timestamptz NOT NULL
    -- Then claimed_count, run_leases, attempts, max_attempts, job_ids and
    -- lane_seqs, added by 12_ring_partitions.sql (missing values 1, {1}, {1}
    -- and {25}: a claim of one job on its first run, with the default
    -- max_attempts, stores none of them; lane_seqs NULL when the jobs' lane
    -- positions are first_lane_seq, first_lane_seq + 1, ... in claim order, as
    -- a claim of one range's are: such a row stores one bigint instead of an
    -- array, docs/architecture.md §4, "Evidence rows store no copy of a key";
    -- job_ids NULL likewise when the job ids are first_job_id,
    -- first_job_id + 1, ..., as one job's and those of jobs enqueued together
    -- are: 24 bytes per batch-1 claim fewer, docs/architecture.md §4, "A claim
    -- batch stores its first job id"). Read the ids as
    -- awa._claim_job_ids(first_job_id, claimed_count, job_ids).
    -- No primary key: each slot's table has a unique index on batch_id
    -- (12_ring_partitions.sql), 8 bytes per entry smaller than a key that
    -- holds the slot as a primary key of the parent must.
) PARTITION BY LIST (claim_slot);

CREATE TABLE awa.lease_claim_closures (
    claim_slot smallint    NOT NULL,
    job_id     bigint      NOT NULL,
    run_lease  bigint      NOT NULL,
    outcome    text        NOT NULL,
    closed_at  timestamptz NOT NULL,
    CHECK (outcome IN ('completed', 'retryable', 'scheduled', 'failed', 'dlq',
                       'cancelled', 'rescued', 'deadline_expired')),
    PRIMARY KEY (job_id, run_lease, claim_slot)
) PARTITION BY LIST (claim_slot);

-- Closure evidence for compact receipts: one row per closing call, claim
-- batch and run of consecutive positions it closed; claim_indexes are those
-- 0-based positions of the claim batch, closed_count of them (their jobs and
-- run leases are the claim batch's at those positions). batch_id is keyed
-- under the claim batch by the run's first position: (claim_batch_id << 14)
-- | claim_indexes[1] (src/core/receipt.hpp), so "is position i closed" is one
-- probe (the last closure keyed at or below i), and a claim batch's closures
-- are the batch_id range
-- awa._first_closure_batch_id(id) .. awa._last_closure_batch_id(id), with no
-- claim_batch_id column (awa._claim_batch_of_closure(batch_id) is the claim
-- batch) and no index on it (docs/architecture.md, "Closures keyed under
-- their claim batch"). The two slots share the first 8 bytes.
CREATE TABLE awa.lease_claim_closure_batches (
    claim_slot       smallint    NOT NULL,
    ready_slot       smallint    NOT NULL,
    batch_id         bigint      NOT NULL,
    ready_generation bigint      NOT NULL,
    closed_at        timestamptz NOT NULL
    -- Then outcome, closed_count and claim_indexes, added by
    -- 12_ring_partitions.sql (missing values 'completed', 1 and {0}: the
    -- completion of a claim of one job stores none of them).
    -- No primary key: each slot's table has a unique index on batch_id
    -- (12_ring_partitions.sql), 8 bytes per entry smaller than a key that
    -- holds the slot as a primary key of the parent must.
) PARTITION BY LIST (claim_slot);

