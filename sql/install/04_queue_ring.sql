-- ---------------------------------------------------------------------------
-- Queue ring family (PARTITION BY LIST (ready_slot)); truncated together.
-- A lane's rows are keyed by its lane_id (awa.queue_lanes.lane_id; a lane row
-- is deleted only once no row of it is left here: 51_lane_reclaim.sql), not
-- by (queue, priority): the claim walk, the prune
-- proofs and carry select a lane's rows by lane_id. queue and priority stay
-- as plain columns for the readers (get_job, history, DLQ, metrics, cancel):
-- with priority in the slot's padding, a row is no wider than before
-- (docs/architecture.md, "Rows keyed by lane_id").
-- ---------------------------------------------------------------------------
-- Columns in the order that leaves no alignment padding: the smallints, the
-- bigints and timestamps, then the variable-length and the usually NULL ones
-- (15 bytes of WAL and heap per job fewer than in declaration order by
-- meaning; docs/architecture.md, "The enqueue cursor is logged ahead").
-- src/pg/job_insert.cpp writes the columns in this order.
CREATE TABLE awa.ready_entries (
    ready_slot       smallint    NOT NULL,
    priority         smallint    NOT NULL,
    attempt          smallint    NOT NULL DEFAULT 0,
    max_attempts     smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    lane_id          bigint      NOT NULL,
    lane_seq         bigint      NOT NULL,
    job_id           bigint      NOT NULL,
    run_at           timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    queue            text        NOT NULL,
    kind             text        NOT NULL,
    args             jsonb       NOT NULL
    -- Then run_lease, attempted_at, unique_key, unique_states, payload and
    -- origin_generation, added by 12_ring_partitions.sql once the slots'
    -- tables exist, so that each of them reads a row that ends before
    -- run_lease as run_lease 0 and the rest NULL. A fresh job's row ends
    -- there: 16 bytes per job fewer (docs/architecture.md, "A ready row ends
    -- at its last value").
) PARTITION BY LIST (ready_slot);
-- No primary key on the parent: each partition has a unique index on
-- (lane_id, lane_seq) (12_ring_partitions.sql). A primary key of a partitioned
-- table must hold the partition key, (lane_id, lane_seq, ready_slot), which is
-- unique per partition all the same; without ready_slot each index entry is
-- 8 bytes smaller (8 bytes of WAL per job; docs/architecture.md, "The enqueue
-- cursor is logged ahead").
-- That index is also how claims route: a lane's ready rows beyond its
-- cursor, in lane order, are its committed lanes (each row the range
-- [lane_seq, lane_seq + 1); docs/architecture.md, "A ready row is its own
-- committed range").
-- lane_id is a key column, not only payload: a listing of one queue
-- (awa._list_jobs) finds the newest job of a lane in a slot with a backward
-- scan that checks the lane inside the index pages, passing over other
-- queues' newer rows without a heap fetch (docs/operations-ui.md, "What a
-- page costs"). 8 bytes more per entry; lookups by job_id read it as before.
CREATE INDEX ready_entries_job_id_idx ON awa.ready_entries (job_id, lane_id);

-- Hides an unclaimed ready row without touching it (cancel, reprioritise).
CREATE TABLE awa.ready_tombstones (
    ready_slot       smallint    NOT NULL,
    priority         smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    lane_id          bigint      NOT NULL,
    queue            text        NOT NULL,
    lane_seq         bigint      NOT NULL,
    job_id           bigint      NOT NULL,
    tombstoned_at    timestamptz NOT NULL,
    PRIMARY KEY (lane_id, lane_seq, ready_generation, ready_slot)
) PARTITION BY LIST (ready_slot);

-- The claim evidence ledger: one row per claim call, in the ready row's slot.
-- Its lanes are exactly the lanes that were handed out: lane_ranges, or when
-- NULL the one range [first_lane_seq, next_lane_seq). Readers test a lane x
-- with first_lane_seq <= x AND next_lane_seq > x AND (lane_ranges IS NULL OR
-- lane_ranges @> x), and aggregate coalesce(lane_ranges,
-- int8multirange(int8range(first_lane_seq, next_lane_seq))); the claim walk's
-- C reader (claim_walk.cpp) reads a NULL the same way. A claim cursor moves
-- past a lane only while such a row covering it is visible.
CREATE TABLE awa.ready_claim_attempt_batches (
    ready_slot       smallint       NOT NULL,
    priority         smallint       NOT NULL,
    claim_slot       smallint       NOT NULL,
    ready_generation bigint         NOT NULL,
    batch_id         bigint         NOT NULL,
    lane_id          bigint         NOT NULL,
    queue            text           NOT NULL,
    claim_generation bigint         NOT NULL,
    first_lane_seq   bigint         NOT NULL,
    next_lane_seq    bigint         NOT NULL,
    claimed_at       timestamptz    NOT NULL
    -- Then claimed_count and lane_ranges, added by 12_ring_partitions.sql
    -- (claimed_count's missing value 1: a claim of one job stores no count;
    -- lane_ranges NULL when the claim took the one range [first_lane_seq,
    -- next_lane_seq), as every claim that passed no open enqueue did: such a
    -- row ends before both, 32 bytes of WAL fewer (docs/architecture.md §4,
    -- "Claim evidence of one range")).
    -- No primary key and no batch_id index: every reader finds these rows by
    -- lane (the index below); batch_id is the claim batch's, unique in
    -- awa.lease_claim_batches (05_claim_ring.sql). An index nobody reads cost
    -- each claim a B-tree insert: 67 bytes of WAL and 2 % of the
    -- instructions of a batch-1 job (docs/architecture.md §4, "Batch
    -- evidence keyed per slot").
) PARTITION BY LIST (ready_slot);
CREATE INDEX ready_claim_attempt_batches_lane_next_idx
    ON awa.ready_claim_attempt_batches (lane_id, next_lane_seq);


-- Terminal facts for failed, cancelled and wide completions. Body columns are
-- NULL when the ready row is retained (narrow rows).
CREATE TABLE awa.done_entries (
    ready_slot       smallint    NOT NULL,
    priority         smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    lane_id          bigint      NOT NULL,
    queue            text        NOT NULL,
    lane_seq         bigint      NOT NULL,
    job_id           bigint      NOT NULL,
    run_lease        bigint      NOT NULL,
    attempt          smallint    NOT NULL,
    kind             text        NOT NULL,
    state            text        NOT NULL CHECK (state IN ('completed', 'failed', 'cancelled')),
    finalized_at     timestamptz NOT NULL,
    args             jsonb,
    max_attempts     smallint,
    run_at           timestamptz,
    created_at       timestamptz,
    unique_key       bytea,
    payload          jsonb,
    PRIMARY KEY (lane_id, lane_seq, ready_slot)
) PARTITION BY LIST (ready_slot);
CREATE INDEX done_entries_job_id_idx ON awa.done_entries (job_id);
CREATE INDEX done_entries_failed_idx ON awa.done_entries (queue) WHERE state = 'failed';

-- Compact terminal history of successful completions: one row per completing
-- call, claim batch and run of consecutive positions, arrays per job. batch_id is its closure batch's,
-- keyed under the claim batch (05_claim_ring.sql; awa._claim_batch_of_closure(batch_id) is the
-- claim batch, stored nowhere else). The jobs are the slot's ready rows at
-- (lane_id, lane_seqs[i]), read from them (their job_id): a completion stores
-- no job ids (docs/architecture.md §4, "Completion receipts without a B-tree").
CREATE TABLE awa.receipt_completion_batches (
    ready_slot       smallint    NOT NULL,
    claim_slot       smallint    NOT NULL,
    priority         smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    batch_id         bigint      NOT NULL,
    lane_id          bigint      NOT NULL,
    first_lane_seq   bigint      NOT NULL,
    queue            text        NOT NULL,
    completed_at     timestamptz NOT NULL
    -- Then completed_count, run_leases and lane_seqs, added by
    -- 12_ring_partitions.sql (missing values 1 and {1}: the completion of one
    -- job on its first run stores neither; lane_seqs NULL when the positions
    -- are first_lane_seq, first_lane_seq + 1, ..., as the completion of
    -- consecutive jobs' are). Read the positions as
    -- awa._lane_positions(first_lane_seq, completed_count, lane_seqs).
    -- No primary key and no B-tree: each slot's table has a BRIN index on
    -- batch_id (12_ring_partitions.sql), for awa.get_job's look-up; the
    -- closure batch of the same id is unique in lease_claim_closure_batches.
) PARTITION BY LIST (ready_slot);

