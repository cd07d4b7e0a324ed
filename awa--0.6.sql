-- awa 0.6: a job queue that lives inside PostgreSQL.
--
-- Storage follows the awa 0.6 queue-storage engine (docs/architecture.md):
--   queue ring  (ready_slot) : ready_entries, ready_segments, ready_tombstones,
--                              ready_claim_attempt_batches, done_entries,
--                              receipt_completion_batches
--   claim ring  (claim_slot) : lease_claims, lease_claim_batches,
--                              lease_claim_closures, lease_claim_closure_batches
--   lease ring  (lease_slot) : leases
--   plain                    : attempt_state, deferred_jobs, dlq_entries
--   control                  : queue_lanes (+ two sequences per lane), ring state,
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

-- ---------------------------------------------------------------------------
-- Identities
-- ---------------------------------------------------------------------------
CREATE SEQUENCE awa.job_id_seq;
CREATE SEQUENCE awa.queue_lane_id_seq;
-- One id per claim call: shared by the claim's ready_claim_attempt_batches row
-- and its lease_claim_batches row, and encoded in every receipt id it hands out.
CREATE SEQUENCE awa.claim_batch_id_seq;
-- One id per completion group: shared by the closure batch and the completion batch.
CREATE SEQUENCE awa.closure_batch_id_seq;
-- Ring epoch (a seqlock): a rotation bumps it to an odd value before it appends
-- to a rotation ledger and to an even value after that commit. An enqueue that
-- reads the same even epoch before and after reserving its lane_seq knows the
-- ring position it cached for that epoch held at the reservation instant, so
-- ready generations never decrease along a lane (docs/architecture.md).
CREATE SEQUENCE awa.ring_epoch_seq MINVALUE 0 START 1;

-- ---------------------------------------------------------------------------
-- Rings: configuration, append-only rotation ledgers, slot lock targets
-- ---------------------------------------------------------------------------
CREATE TABLE awa.queue_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 4 AND 64)
);
CREATE TABLE awa.claim_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 2 AND 16)
);
CREATE TABLE awa.lease_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 2 AND 64)
);

-- The current position of a ring is its highest generation. Rotation appends
-- (generation + 1, next slot) with ON CONFLICT DO NOTHING: a compare-and-swap
-- that never updates a row.
CREATE TABLE awa.queue_ring_rotations (
    generation bigint PRIMARY KEY CHECK (generation >= 0),
    slot       smallint NOT NULL CHECK (slot >= 0),
    rotated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE awa.claim_ring_rotations (LIKE awa.queue_ring_rotations INCLUDING ALL);
CREATE TABLE awa.lease_ring_rotations (LIKE awa.queue_ring_rotations INCLUDING ALL);

CREATE TABLE awa.queue_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.claim_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.lease_ring_slots (slot smallint PRIMARY KEY);

-- ---------------------------------------------------------------------------
-- Lanes: (queue, priority). Cursors live in two sequences per lane:
--   enqueue cursor = highest reserved lane_seq (nextval, never rolled back)
--   claim cursor   = highest lane_seq proven spent (setval, moves forward only)
-- The row is written once, when the lane is first used, and never updated.
-- ---------------------------------------------------------------------------
CREATE TABLE awa.queue_lanes (
    queue       text     NOT NULL CHECK (length(queue) BETWEEN 1 AND 200),
    priority    smallint NOT NULL CHECK (priority BETWEEN 1 AND 4),
    lane_id     bigint   NOT NULL UNIQUE,
    enqueue_seq regclass NOT NULL,
    claim_seq   regclass NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, priority)
);

-- ---------------------------------------------------------------------------
-- Queue ring family (PARTITION BY LIST (ready_slot)); truncated together.
-- ---------------------------------------------------------------------------
CREATE TABLE awa.ready_entries (
    ready_slot       smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    lane_seq         bigint      NOT NULL,
    job_id           bigint      NOT NULL,
    run_lease        bigint      NOT NULL DEFAULT 0,
    attempt          smallint    NOT NULL DEFAULT 0,
    max_attempts     smallint    NOT NULL,
    kind             text        NOT NULL,
    args             jsonb       NOT NULL,
    run_at           timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    attempted_at     timestamptz,
    unique_key       bytea,
    unique_states    bit(8),
    payload          jsonb,
    PRIMARY KEY (queue, priority, lane_seq, ready_slot)
) PARTITION BY LIST (ready_slot);
CREATE INDEX ready_entries_job_id_idx ON awa.ready_entries (job_id);

-- One row per enqueue call and lane: the committed contiguous range
-- [first_lane_seq, next_lane_seq). Claim routes through it: the first segment
-- with next_lane_seq > cursor says where the lane's head is and how many
-- committed rows follow it.
CREATE TABLE awa.ready_segments (
    ready_slot       smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    first_lane_seq   bigint      NOT NULL,
    next_lane_seq    bigint      NOT NULL,
    first_run_at     timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    -- Segments of a lane never overlap, so next_lane_seq is unique per lane;
    -- keyed on it, the claim's routing probe is the primary key.
    PRIMARY KEY (queue, priority, next_lane_seq, ready_slot)
) PARTITION BY LIST (ready_slot);

-- Hides an unclaimed ready row without touching it (cancel, reprioritise).
CREATE TABLE awa.ready_tombstones (
    ready_slot       smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    lane_seq         bigint      NOT NULL,
    job_id           bigint      NOT NULL,
    tombstoned_at    timestamptz NOT NULL,
    PRIMARY KEY (queue, priority, lane_seq, ready_generation, ready_slot)
) PARTITION BY LIST (ready_slot);

-- The claim evidence ledger: one row per claim call, in the ready row's slot.
-- lane_ranges lists exactly the lanes that were handed out. A claim cursor moves
-- past a lane only while such a row covering it is visible.
CREATE TABLE awa.ready_claim_attempt_batches (
    ready_slot       smallint       NOT NULL,
    ready_generation bigint         NOT NULL,
    batch_id         bigint         NOT NULL,
    queue            text           NOT NULL,
    priority         smallint       NOT NULL,
    claim_slot       smallint       NOT NULL,
    claim_generation bigint         NOT NULL,
    first_lane_seq   bigint         NOT NULL,
    next_lane_seq    bigint         NOT NULL,
    claimed_count    integer        NOT NULL,
    lane_ranges      int8multirange NOT NULL,
    claimed_at       timestamptz    NOT NULL,
    PRIMARY KEY (batch_id, ready_slot)
) PARTITION BY LIST (ready_slot);
CREATE INDEX ready_claim_attempt_batches_lane_next_idx
    ON awa.ready_claim_attempt_batches (queue, priority, next_lane_seq);

-- Terminal facts for failed, cancelled and wide completions. Body columns are
-- NULL when the ready row is retained (narrow rows).
CREATE TABLE awa.done_entries (
    ready_slot       smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
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
    PRIMARY KEY (queue, priority, lane_seq, ready_slot)
) PARTITION BY LIST (ready_slot);
CREATE INDEX done_entries_job_id_idx ON awa.done_entries (job_id);
CREATE INDEX done_entries_failed_idx ON awa.done_entries (queue) WHERE state = 'failed';

-- Compact terminal history of successful completions: one row per completion
-- group (one claim batch), arrays per job.
CREATE TABLE awa.receipt_completion_batches (
    ready_slot       smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    batch_id         bigint      NOT NULL,
    claim_slot       smallint    NOT NULL,
    claim_batch_id   bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    completed_count  integer     NOT NULL,
    job_ids          bigint[]    NOT NULL,
    run_leases       bigint[]    NOT NULL,
    lane_seqs        bigint[]    NOT NULL,
    completed_at     timestamptz NOT NULL,
    PRIMARY KEY (batch_id, ready_slot)
) PARTITION BY LIST (ready_slot);
CREATE INDEX receipt_completion_batches_claim_batch_idx
    ON awa.receipt_completion_batches (claim_batch_id);

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
-- by one primary-key probe (docs/architecture.md, "Receipts").
CREATE TABLE awa.lease_claim_batches (
    claim_slot       smallint    NOT NULL,
    claim_generation bigint      NOT NULL,
    batch_id         bigint      NOT NULL,
    ready_slot       smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    claimed_count    integer     NOT NULL,
    job_ids          bigint[]    NOT NULL,
    run_leases       bigint[]    NOT NULL,
    lane_seqs        bigint[]    NOT NULL,
    attempts         smallint[]  NOT NULL,
    max_attempts     smallint[]  NOT NULL,
    deadline_at      timestamptz NOT NULL,
    claimed_at       timestamptz NOT NULL,
    PRIMARY KEY (batch_id, claim_slot)
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

-- Closure evidence for compact receipts: one row per closing call and claim
-- batch; claim_indexes are the 0-based positions closed in that claim batch.
CREATE TABLE awa.lease_claim_closure_batches (
    claim_slot       smallint    NOT NULL,
    batch_id         bigint      NOT NULL,
    claim_batch_id   bigint      NOT NULL,
    ready_slot       smallint    NOT NULL,
    ready_generation bigint      NOT NULL,
    outcome          text        NOT NULL,
    closed_count     integer     NOT NULL,
    claim_indexes    integer[]   NOT NULL,
    job_ids          bigint[]    NOT NULL,
    run_leases       bigint[]    NOT NULL,
    closed_at        timestamptz NOT NULL,
    PRIMARY KEY (batch_id, claim_slot)
) PARTITION BY LIST (claim_slot);
CREATE INDEX lease_claim_closure_batches_claim_batch_idx
    ON awa.lease_claim_closure_batches (claim_batch_id);

-- ---------------------------------------------------------------------------
-- Lease ring (PARTITION BY LIST (lease_slot)): materialized attempts that need
-- mutable state (callbacks, long attempts).
-- ---------------------------------------------------------------------------
CREATE TABLE awa.leases (
    lease_slot          smallint    NOT NULL,
    lease_generation    bigint      NOT NULL,
    ready_slot          smallint    NOT NULL,
    ready_generation    bigint      NOT NULL,
    queue               text        NOT NULL,
    priority            smallint    NOT NULL,
    lane_seq            bigint      NOT NULL,
    job_id              bigint      NOT NULL,
    run_lease           bigint      NOT NULL,
    state               text        NOT NULL CHECK (state IN ('running', 'waiting_external')),
    attempt             smallint    NOT NULL,
    max_attempts        smallint    NOT NULL,
    heartbeat_at        timestamptz,
    deadline_at         timestamptz,
    attempted_at        timestamptz NOT NULL,
    callback_id         uuid,
    callback_timeout_at timestamptz,
    PRIMARY KEY (queue, priority, lane_seq, lease_slot)
) PARTITION BY LIST (lease_slot);
CREATE INDEX leases_attempt_idx ON awa.leases (job_id, run_lease);

-- ---------------------------------------------------------------------------
-- Plain tables
-- ---------------------------------------------------------------------------
-- Heartbeat and progress of long attempts; created lazily, deleted when the
-- attempt ends. Short jobs never touch it.
CREATE TABLE awa.attempt_state (
    job_id       bigint NOT NULL,
    run_lease    bigint NOT NULL,
    heartbeat_at timestamptz,
    progress     jsonb,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (job_id, run_lease)
) WITH (fillfactor = 80);

-- Jobs that are not yet available: future run_at (scheduled), backoff (retryable).
CREATE TABLE awa.deferred_jobs (
    job_id        bigint PRIMARY KEY,
    queue         text        NOT NULL,
    priority      smallint    NOT NULL CHECK (priority BETWEEN 1 AND 4),
    kind          text        NOT NULL,
    args          jsonb       NOT NULL,
    state         text        NOT NULL CHECK (state IN ('scheduled', 'retryable')),
    run_at        timestamptz NOT NULL,
    run_lease     bigint      NOT NULL DEFAULT 0,
    attempt       smallint    NOT NULL DEFAULT 0,
    max_attempts  smallint    NOT NULL,
    created_at    timestamptz NOT NULL,
    finalized_at  timestamptz,
    unique_key    bytea,
    unique_states bit(8),
    payload       jsonb
);
CREATE INDEX deferred_jobs_due_idx ON awa.deferred_jobs (state, run_at, queue, priority, job_id);
CREATE INDEX deferred_jobs_unique_key_idx ON awa.deferred_jobs (unique_key) WHERE unique_key IS NOT NULL;

CREATE TABLE awa.dlq_entries (
    job_id             bigint PRIMARY KEY,
    queue              text        NOT NULL,
    priority           smallint    NOT NULL,
    kind               text        NOT NULL,
    args               jsonb       NOT NULL,
    run_lease          bigint      NOT NULL,
    original_run_lease bigint      NOT NULL,
    attempt            smallint    NOT NULL,
    max_attempts       smallint    NOT NULL,
    run_at             timestamptz NOT NULL,
    created_at         timestamptz NOT NULL,
    payload            jsonb,
    dlq_reason         text        NOT NULL,
    dlq_at             timestamptz NOT NULL
);
CREATE INDEX dlq_entries_queue_idx ON awa.dlq_entries (queue, dlq_at DESC);

-- ---------------------------------------------------------------------------
-- Ring partitions. Slot counts come from awa.queue_slot_count,
-- awa.claim_slot_count and awa.lease_slot_count when set at CREATE EXTENSION
-- time, else 16 / 8 / 8, and are fixed afterwards.
-- ---------------------------------------------------------------------------
DO $ring$
DECLARE
    queue_slots int := coalesce(nullif(current_setting('awa.queue_slot_count', true), '')::int, 16);
    claim_slots int := coalesce(nullif(current_setting('awa.claim_slot_count', true), '')::int, 8);
    lease_slots int := coalesce(nullif(current_setting('awa.lease_slot_count', true), '')::int, 8);
    family text;
BEGIN
    INSERT INTO awa.queue_ring_state (slot_count) VALUES (queue_slots);
    INSERT INTO awa.claim_ring_state (slot_count) VALUES (claim_slots);
    INSERT INTO awa.lease_ring_state (slot_count) VALUES (lease_slots);
    INSERT INTO awa.queue_ring_rotations (generation, slot) VALUES (0, 0);
    INSERT INTO awa.claim_ring_rotations (generation, slot) VALUES (0, 0);
    INSERT INTO awa.lease_ring_rotations (generation, slot) VALUES (0, 0);

    FOR s IN 0 .. queue_slots - 1 LOOP
        INSERT INTO awa.queue_ring_slots VALUES (s);
        FOREACH family IN ARRAY ARRAY['ready_entries', 'ready_segments', 'ready_tombstones',
                                      'ready_claim_attempt_batches', 'done_entries',
                                      'receipt_completion_batches'] LOOP
            EXECUTE format('CREATE TABLE awa.%I PARTITION OF awa.%I FOR VALUES IN (%s)',
                           family || '_' || s, family, s);
        END LOOP;
    END LOOP;
    FOR s IN 0 .. claim_slots - 1 LOOP
        INSERT INTO awa.claim_ring_slots VALUES (s);
        FOREACH family IN ARRAY ARRAY['lease_claims', 'lease_claim_batches',
                                      'lease_claim_closures', 'lease_claim_closure_batches'] LOOP
            EXECUTE format('CREATE TABLE awa.%I PARTITION OF awa.%I FOR VALUES IN (%s)',
                           family || '_' || s, family, s);
        END LOOP;
    END LOOP;
    FOR s IN 0 .. lease_slots - 1 LOOP
        INSERT INTO awa.lease_ring_slots VALUES (s);
        EXECUTE format('CREATE TABLE awa.%I PARTITION OF awa.leases FOR VALUES IN (%s)',
                       'leases_' || s, s);
    END LOOP;
END
$ring$;

-- ---------------------------------------------------------------------------
-- Roles. Created once per cluster; CREATE EXTENSION in a second database
-- reuses them.
-- ---------------------------------------------------------------------------
DO $roles$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'awa_producer') THEN
        CREATE ROLE awa_producer NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'awa_worker') THEN
        CREATE ROLE awa_worker NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'awa_admin') THEN
        CREATE ROLE awa_admin NOLOGIN;
    END IF;
END
$roles$;
GRANT USAGE ON SCHEMA awa TO awa_producer, awa_worker, awa_admin;
GRANT SELECT ON ALL TABLES IN SCHEMA awa TO awa_admin;

-- ---------------------------------------------------------------------------
-- SQL API (C++). SECURITY DEFINER: callers need only EXECUTE. The C code runs
-- every statement under a pinned search path (pg_catalog only), so no name in
-- what it runs can resolve to a caller's object (src/pg/spi_plans.hpp).
-- ---------------------------------------------------------------------------
CREATE FUNCTION awa.enqueue(
    kind         text,
    args         jsonb       DEFAULT '{}',
    queue        text        DEFAULT 'default',
    priority     int         DEFAULT 2,
    run_at       timestamptz DEFAULT NULL,
    max_attempts int         DEFAULT 25,
    opts         jsonb       DEFAULT '{}')
RETURNS bigint
AS 'MODULE_PATHNAME', 'awa_enqueue'
LANGUAGE C VOLATILE SECURITY DEFINER;

CREATE FUNCTION awa.enqueue_many(
    kinds        text[],
    args         jsonb[],
    queue        text          DEFAULT 'default',
    priorities   int[]         DEFAULT NULL,
    run_at       timestamptz[] DEFAULT NULL,
    max_attempts int           DEFAULT 25)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'awa_enqueue_many'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 100;

CREATE FUNCTION awa.claim(
    queue    text,
    max_jobs int      DEFAULT 1,
    deadline interval DEFAULT '5 minutes')
RETURNS TABLE (
    job_id       bigint,
    run_lease    bigint,
    receipt_id   bigint,
    kind         text,
    args         jsonb,
    queue        text,
    priority     int,
    attempt      int,
    max_attempts int,
    deadline_at  timestamptz,
    created_at   timestamptz,
    metadata     jsonb)
AS 'MODULE_PATHNAME', 'awa_claim'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

CREATE FUNCTION awa.complete(job_id bigint, run_lease bigint, receipt_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'awa_complete'
LANGUAGE C VOLATILE SECURITY DEFINER;

CREATE FUNCTION awa.complete_many(job_ids bigint[], run_leases bigint[], receipt_ids bigint[])
RETURNS TABLE (job_id bigint, accepted boolean)
AS 'MODULE_PATHNAME', 'awa_complete_many'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

-- A lane cursor's value, read under AccessShareLock (pg_sequence_last_value
-- would hold RowExclusiveLock until the reader's transaction ends, and that
-- would hold up the lock a claim takes to prove a lane gap dead). Checks that
-- the caller may SELECT the sequence.
CREATE FUNCTION awa.cursor_value(seq regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'awa_cursor_value'
LANGUAGE C STABLE STRICT;

-- Read-only view of every lane and its two cursors.
CREATE VIEW awa.lanes AS
SELECT l.queue,
       l.priority,
       l.lane_id,
       awa.cursor_value(l.enqueue_seq) AS enqueue_cursor,
       awa.cursor_value(l.claim_seq)   AS claim_cursor
FROM awa.queue_lanes l;

REVOKE ALL ON FUNCTION awa.enqueue(text, jsonb, text, int, timestamptz, int, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION awa.enqueue_many(text[], jsonb[], text, int[], timestamptz[], int) FROM PUBLIC;
REVOKE ALL ON FUNCTION awa.claim(text, int, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION awa.complete(bigint, bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION awa.complete_many(bigint[], bigint[], bigint[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION awa.cursor_value(regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION awa.cursor_value(regclass) TO awa_admin;

GRANT EXECUTE ON FUNCTION awa.enqueue(text, jsonb, text, int, timestamptz, int, jsonb),
                          awa.enqueue_many(text[], jsonb[], text, int[], timestamptz[], int)
    TO awa_producer, awa_admin;
GRANT EXECUTE ON FUNCTION awa.claim(text, int, interval),
                          awa.complete(bigint, bigint, bigint),
                          awa.complete_many(bigint[], bigint[], bigint[])
    TO awa_worker, awa_admin;
GRANT SELECT ON awa.lanes TO awa_admin;
