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
-- The server run (start, crash restart or promotion) that last moved
-- claim_batch_id_seq past every id an earlier run may have handed out in a
-- claim lost with its unflushed WAL (src/pg/claim_fence.hpp): the same receipt
-- id is never handed out twice, so a lost claim's worker is refused.
CREATE SEQUENCE awa.claim_fence_seq MINVALUE 0 START 0;
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
-- The history ring keeps finished jobs for awa.history_retention after their
-- queue-ring slot is reclaimed (docs/maintenance.md, "History").
CREATE TABLE awa.history_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 4 AND 64)
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
CREATE TABLE awa.history_ring_rotations (LIKE awa.queue_ring_rotations INCLUDING ALL);
-- The queue ring's slots can stay out of the rotation (a slot whose live rows are
-- too many to copy forward, docs/maintenance.md §3.6): the generation that owns
-- a slot is the newest one the ledger maps to it, found with this index.
CREATE INDEX queue_ring_rotations_slot_idx ON awa.queue_ring_rotations (slot, generation);

CREATE TABLE awa.queue_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.claim_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.lease_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.history_ring_slots (slot smallint PRIMARY KEY);

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
    unique_states    smallint,
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
    -- The generation its lanes were enqueued into: ready_generation, unless a
    -- prune carried them forward (then the oldest origin among them). Lanes
    -- take origins in lane order, so the claim walk learns where a lane's
    -- head can be from the origins of lanes at or below its cursor.
    origin_generation bigint     NOT NULL,
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
-- History ring (PARTITION BY LIST (history_slot)): one row per finished job
-- (completed, failed, cancelled), written by the queue-ring prune that
-- reclaims the job's slot, in the same transaction as its TRUNCATE, and
-- reclaimed by TRUNCATE once every row of its slot is older than
-- awa.history_retention. Insert-only, like every ring.
-- ---------------------------------------------------------------------------
CREATE TABLE awa.job_history (
    history_slot smallint    NOT NULL,
    job_id       bigint      NOT NULL,
    queue        text        NOT NULL,
    priority     smallint    NOT NULL,
    kind         text        NOT NULL,
    args         jsonb       NOT NULL,
    state        text        NOT NULL,
    attempt      smallint    NOT NULL,
    max_attempts smallint    NOT NULL,
    run_lease    bigint      NOT NULL,
    run_at       timestamptz NOT NULL,
    created_at   timestamptz NOT NULL,
    attempted_at timestamptz,
    finalized_at timestamptz NOT NULL,
    unique_key   bytea,
    payload      jsonb
) PARTITION BY LIST (history_slot);
CREATE INDEX job_history_job_id_idx ON awa.job_history (job_id);

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
    unique_states smallint,
    payload       jsonb
);
-- Promotion walks due jobs in (run_at, priority, job_id) order and stops at its batch size.
CREATE INDEX deferred_jobs_due_idx ON awa.deferred_jobs (run_at, priority, job_id);
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
    unique_key         bytea,
    unique_states      smallint,
    payload            jsonb,
    dlq_reason         text        NOT NULL,
    dlq_at             timestamptz NOT NULL
);
CREATE INDEX dlq_entries_queue_idx ON awa.dlq_entries (queue, dlq_at DESC);

-- ---------------------------------------------------------------------------
-- Control plane
-- ---------------------------------------------------------------------------
-- Per-queue settings (awa.configure_queue, pause_queue, resume_queue). A queue
-- without a row has the defaults. Claims read it through a per-backend cache
-- that every change invalidates at commit (src/pg/queue_settings.hpp).
CREATE TABLE awa.queue_meta (
    queue            text        PRIMARY KEY CHECK (length(queue) BETWEEN 1 AND 200),
    paused           boolean     NOT NULL DEFAULT false,
    paused_at        timestamptz,
    dlq_enabled      boolean     NOT NULL DEFAULT false,
    aging_interval   interval    NOT NULL DEFAULT '60 seconds' CHECK (aging_interval >= interval '0'),
    default_deadline interval    CHECK (default_deadline > interval '0'),
    updated_at       timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 70);

-- ---------------------------------------------------------------------------
-- Periodic jobs (docs/periodic.md): one row per schedule. The maintenance
-- worker's periodic step enqueues a due tick and moves next_run_at in one
-- transaction, under the row's lock, so each tick is enqueued once.
-- ---------------------------------------------------------------------------
CREATE TABLE awa.periodic_schedules (
    name        text        PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 200),
    schedule    text        NOT NULL,
    timezone    text        NOT NULL,
    kind        text        NOT NULL,
    args        jsonb       NOT NULL,
    queue       text        NOT NULL,
    priority    smallint    NOT NULL,
    opts        jsonb       NOT NULL,
    next_run_at timestamptz NOT NULL,  -- the next tick to enqueue
    last_run_at timestamptz,           -- the last tick enqueued
    last_job_id bigint,                -- the job of that tick
    last_error  text,                  -- why the last step could not enqueue; NULL once one did
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX periodic_schedules_due_idx ON awa.periodic_schedules (next_run_at);

-- Uniqueness ownership: one row per unique key while its job is in one of the
-- key's states (bit i = state i in awa.queue_counts column order). Taken at
-- enqueue; released when the job reaches a final state outside the mask.
CREATE TABLE awa.job_unique_claims (
    unique_key    bytea       PRIMARY KEY,
    job_id        bigint      NOT NULL,
    unique_states smallint    NOT NULL,
    claimed_at    timestamptz NOT NULL
) WITH (fillfactor = 80);
CREATE INDEX job_unique_claims_job_id_idx ON awa.job_unique_claims (job_id);

-- ---------------------------------------------------------------------------
-- Ring partitions. Slot counts come from awa.queue_slot_count,
-- awa.claim_slot_count, awa.lease_slot_count and awa.history_slot_count when
-- set at CREATE EXTENSION time, else 16 / 8 / 8 / 8, and are fixed afterwards.
-- Which families belong to a ring is said once, by awa._slot_children: the
-- partitions are made from it, and rotation, prune and storage_status read it.
-- ---------------------------------------------------------------------------
-- The children of one ring slot, in lock order.
CREATE FUNCTION awa._slot_children(ring text, slot int)
RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT array_agg(format('awa.%I', f || '_' || slot) ORDER BY o)
  FROM unnest(CASE ring
                 WHEN 'queue' THEN ARRAY['ready_entries', 'ready_segments', 'ready_tombstones',
                                         'ready_claim_attempt_batches', 'done_entries',
                                         'receipt_completion_batches']
                 WHEN 'claim' THEN ARRAY['lease_claims', 'lease_claim_batches', 'lease_claim_closures',
                                         'lease_claim_closure_batches']
                 WHEN 'lease' THEN ARRAY['leases']
                 WHEN 'history' THEN ARRAY['job_history']
               END) WITH ORDINALITY AS t(f, o)
$$;

DO $ring$
DECLARE
    slot_counts jsonb := jsonb_build_object(
        'queue', coalesce(nullif(current_setting('awa.queue_slot_count', true), '')::int, 16),
        'claim', coalesce(nullif(current_setting('awa.claim_slot_count', true), '')::int, 8),
        'lease', coalesce(nullif(current_setting('awa.lease_slot_count', true), '')::int, 8),
        'history', coalesce(nullif(current_setting('awa.history_slot_count', true), '')::int, 8));
    ring text;
    n int;
    child text;
BEGIN
    -- Each ring: its state, its first ledger entry, and per slot its slot row and
    -- one partition of each of its families (awa._slot_children, the one list).
    FOREACH ring IN ARRAY ARRAY['queue', 'claim', 'lease', 'history'] LOOP
        n := (slot_counts ->> ring)::int;
        EXECUTE format('INSERT INTO awa.%I (slot_count) VALUES ($1)', ring || '_ring_state') USING n;
        EXECUTE format('INSERT INTO awa.%I (generation, slot) VALUES (0, 0)', ring || '_ring_rotations');
        FOR s IN 0 .. n - 1 LOOP
            EXECUTE format('INSERT INTO awa.%I VALUES ($1)', ring || '_ring_slots') USING s;
            FOREACH child IN ARRAY awa._slot_children(ring, s) LOOP
                EXECUTE format('CREATE TABLE %s PARTITION OF %s FOR VALUES IN (%s)',
                               child, regexp_replace(child, '_[0-9]+$', ''), s);
            END LOOP;
        END LOOP;
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
    -- Reads the metrics surface (docs/monitoring.md) and nothing else.
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'awa_monitor') THEN
        CREATE ROLE awa_monitor NOLOGIN;
    END IF;
END
$roles$;
GRANT USAGE ON SCHEMA awa TO awa_producer, awa_worker, awa_admin, awa_monitor;
GRANT SELECT ON ALL TABLES IN SCHEMA awa TO awa_admin;


-- ---------------------------------------------------------------------------
-- SQL API. The hot path (enqueue, claim, complete, heartbeat, promotion,
-- counts) is C++. SECURITY DEFINER: callers need only EXECUTE. The C code runs
-- every statement under a pinned search path (pg_catalog only), so no name in
-- what it runs can resolve to a caller's object (src/pg/spi_plans.hpp); the
-- SQL and PL/pgSQL functions pin theirs with a SET clause.
--
-- No statement awa runs is JIT-compiled (docs/architecture.md §9): the C
-- code's statements are planned with JIT off by awa's planner hook (no SET
-- clause on the hot C functions: a GUC save and restore per call); every SQL
-- and PL/pgSQL function has SET jit = off. None of those is on a hot path, and
-- their queries are small: compiling one (planner estimates over unanalysed
-- ring children can ask for it) costs 100-250 ms for a query of a millisecond,
-- and a prune would hold its slot lock meanwhile.
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
    max_attempts int           DEFAULT 25,
    opts         jsonb[]       DEFAULT NULL)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'awa_enqueue_many'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 100;

-- deadline NULL: the queue's default_deadline, else 5 minutes.
-- wait NULL or 0: look once; else sleep until a job is available or wait has
-- passed (woken by commits, never polling; docs/sql-reference.md).
-- async_commit NULL: awa.async_claim_commit decides.
CREATE FUNCTION awa.claim(
    queue        text,
    max_jobs     int      DEFAULT 1,
    deadline     interval DEFAULT NULL,
    wait         interval DEFAULT NULL,
    async_commit boolean  DEFAULT NULL)
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

CREATE FUNCTION awa.heartbeat(job_id bigint, run_lease bigint, receipt_id bigint, progress jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_heartbeat'
LANGUAGE C VOLATILE SECURITY DEFINER;

CREATE FUNCTION awa.heartbeat_many(job_ids bigint[], run_leases bigint[], receipt_ids bigint[],
                                   progress jsonb[] DEFAULT NULL)
RETURNS TABLE (job_id bigint, run_lease bigint, status text)
AS 'MODULE_PATHNAME', 'awa_heartbeat_many'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

-- Waits until every commit that returned before the call is flushed to disk
-- (and confirmed by the synchronous standbys, if any); returns that LSN.
-- For a worker after an asynchronous claim, before a side effect it cannot
-- undo (docs/sql-reference.md).
CREATE FUNCTION awa.await_durable()
RETURNS pg_lsn
AS 'MODULE_PATHNAME', 'awa_await_durable'
LANGUAGE C VOLATILE;

CREATE FUNCTION awa.promote_due(max_jobs int DEFAULT 4096)
RETURNS int
AS 'MODULE_PATHNAME', 'awa_promote_due'
LANGUAGE C VOLATILE SECURITY DEFINER;

CREATE FUNCTION awa.queue_counts(queue text DEFAULT NULL)
RETURNS TABLE (queue text, available bigint, scheduled bigint, retryable bigint, running bigint,
               completed bigint, failed bigint, cancelled bigint, dlq bigint)
AS 'MODULE_PATHNAME', 'awa_queue_counts'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

-- Recounts every queue of this database with one exact pass (the counters
-- are rebuilt like this after a restart on first use); true when they are
-- trusted afterwards.
CREATE FUNCTION awa.rebuild_counters()
RETURNS boolean
AS 'MODULE_PATHNAME', 'awa_rebuild_counters'
LANGUAGE C VOLATILE SECURITY DEFINER;

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

-- ---------------------------------------------------------------------------
-- Internal building blocks (granted to no role; awa's SECURITY DEFINER
-- functions call them as the extension owner).
-- ---------------------------------------------------------------------------
-- Locks the attempt's claim batch for the transaction and reports it; with an
-- outcome, closes it when it is open (status 'closed_now').
CREATE FUNCTION awa._attempt(job_id bigint, run_lease bigint, receipt_id bigint, outcome text)
RETURNS TABLE (status text, closed_outcome text, queue text, priority int, ready_slot int,
               ready_generation bigint, lane_seq bigint, attempt int, max_attempts int,
               claimed_at timestamptz)
AS 'MODULE_PATHNAME', 'awa_internal_attempt'
LANGUAGE C VOLATILE;

-- Hides an unclaimed ready row (cancel); 'tombstoned', 'claimed' or 'already_tombstoned'.
CREATE FUNCTION awa._tombstone(queue text, priority int, lane_seq bigint, ready_slot int,
                               ready_generation bigint, job_id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_internal_tombstone'
LANGUAGE C VOLATILE;

-- Moves the given deferred jobs into the ready ring now.
CREATE FUNCTION awa._promote_jobs(job_ids bigint[])
RETURNS int
AS 'MODULE_PATHNAME', 'awa_internal_promote_jobs'
LANGUAGE C VOLATILE;

-- Records a move of n jobs between states in this transaction (counters).
CREATE FUNCTION awa._count_move(queue text, from_state text, to_state text, n bigint DEFAULT 1)
RETURNS void
AS 'MODULE_PATHNAME', 'awa_internal_count_move'
LANGUAGE C VOLATILE;

-- Retry delay after failed attempt n: 2^n s + up to 25 % jitter, at most 24 h.
CREATE FUNCTION awa._backoff(attempt int)
RETURNS interval
AS 'MODULE_PATHNAME', 'awa_internal_backoff'
LANGUAGE C VOLATILE;

-- Sends the relcache invalidation that empties every backend's settings cache,
-- and wakes the queue's waiting claims and the maintenance worker at commit
-- (a resumed queue can be claimed and promoted again).
CREATE FUNCTION awa._queue_meta_changed(queue text)
RETURNS void
AS 'MODULE_PATHNAME', 'awa_internal_queue_meta_changed'
LANGUAGE C VOLATILE;

-- The exact pass: every job of the queue (NULL: of every queue with a lane or
-- settings) counted from the tables. STABLE, so it runs under one snapshot
-- (the counter rebuild publishes that snapshot; src/pg/counters.hpp).
--   available = ready rows - lanes handed out by claims - tombstoned lanes
--   running   = claimed attempts - closed attempts
CREATE FUNCTION awa._queue_counts_scan(p_queue text)
RETURNS TABLE (queue text, available bigint, scheduled bigint, retryable bigint, running bigint,
               completed bigint, failed bigint, cancelled bigint, dlq bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
WITH queues AS (
    SELECT l.queue FROM awa.queue_lanes l WHERE p_queue IS NULL OR l.queue = p_queue
    UNION
    SELECT m.queue FROM awa.queue_meta m WHERE p_queue IS NULL OR m.queue = p_queue
), ready AS (
    SELECT e.queue, count(*) AS n FROM awa.ready_entries e
     WHERE p_queue IS NULL OR e.queue = p_queue GROUP BY e.queue
), handed_out AS (
    SELECT b.queue, sum(b.claimed_count) AS n FROM awa.ready_claim_attempt_batches b
     WHERE p_queue IS NULL OR b.queue = p_queue GROUP BY b.queue
), tombstoned AS (
    SELECT t.queue, count(*) AS n FROM awa.ready_tombstones t
     WHERE p_queue IS NULL OR t.queue = p_queue GROUP BY t.queue
), claimed AS (
    SELECT c.queue, sum(c.claimed_count) AS n FROM awa.lease_claim_batches c
     WHERE p_queue IS NULL OR c.queue = p_queue GROUP BY c.queue
), closed AS (
    SELECT c.queue, sum(x.closed_count) AS n
      FROM awa.lease_claim_closure_batches x
      JOIN awa.lease_claim_batches c ON c.batch_id = x.claim_batch_id AND c.claim_slot = x.claim_slot
     WHERE p_queue IS NULL OR c.queue = p_queue GROUP BY c.queue
), completed AS (
    SELECT r.queue, sum(r.completed_count) AS n FROM awa.receipt_completion_batches r
     WHERE p_queue IS NULL OR r.queue = p_queue GROUP BY r.queue
), done AS (
    SELECT d.queue, count(*) FILTER (WHERE d.state = 'failed') AS failed,
           count(*) FILTER (WHERE d.state = 'cancelled') AS cancelled
      FROM awa.done_entries d WHERE p_queue IS NULL OR d.queue = p_queue GROUP BY d.queue
), deferred AS (
    SELECT d.queue, count(*) FILTER (WHERE d.state = 'scheduled') AS scheduled,
           count(*) FILTER (WHERE d.state = 'retryable') AS retryable
      FROM awa.deferred_jobs d WHERE p_queue IS NULL OR d.queue = p_queue GROUP BY d.queue
), dead AS (
    SELECT d.queue, count(*) AS n FROM awa.dlq_entries d WHERE p_queue IS NULL OR d.queue = p_queue GROUP BY d.queue
), history AS (
    SELECT h.queue, count(*) FILTER (WHERE h.state = 'completed') AS completed,
           count(*) FILTER (WHERE h.state = 'failed') AS failed,
           count(*) FILTER (WHERE h.state = 'cancelled') AS cancelled
      FROM awa.job_history h WHERE p_queue IS NULL OR h.queue = p_queue GROUP BY h.queue
)
SELECT q.queue,
       (coalesce(ready.n, 0) - coalesce(handed_out.n, 0) - coalesce(tombstoned.n, 0))::bigint,
       coalesce(deferred.scheduled, 0)::bigint,
       coalesce(deferred.retryable, 0)::bigint,
       (coalesce(claimed.n, 0) - coalesce(closed.n, 0))::bigint,
       (coalesce(completed.n, 0) + coalesce(history.completed, 0))::bigint,
       (coalesce(done.failed, 0) + coalesce(history.failed, 0))::bigint,
       (coalesce(done.cancelled, 0) + coalesce(history.cancelled, 0))::bigint,
       coalesce(dead.n, 0)::bigint
  FROM queues q
  LEFT JOIN ready USING (queue)
  LEFT JOIN handed_out USING (queue)
  LEFT JOIN tombstoned USING (queue)
  LEFT JOIN claimed USING (queue)
  LEFT JOIN closed USING (queue)
  LEFT JOIN completed USING (queue)
  LEFT JOIN done USING (queue)
  LEFT JOIN deferred USING (queue)
  LEFT JOIN dead USING (queue)
  LEFT JOIN history USING (queue)
 ORDER BY q.queue
$$;

-- ---------------------------------------------------------------------------
-- Worker calls that end a running attempt other than by success
-- (src/pg/fn_end_attempt.cpp).
-- ---------------------------------------------------------------------------
-- retryable (after delay, or backoff ~2^attempt s with jitter, at most 24 h);
-- failed or dlq when the attempt was the last one; stale.
CREATE FUNCTION awa.retry(job_id bigint, run_lease bigint, receipt_id bigint, error text,
                          delay interval DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_retry'
LANGUAGE C VOLATILE SECURITY DEFINER;

-- scheduled (the attempt is given back) or stale.
CREATE FUNCTION awa.snooze(job_id bigint, run_lease bigint, receipt_id bigint, delay interval)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_snooze'
LANGUAGE C VOLATILE SECURITY DEFINER;

-- failed, dlq (the queue has DLQ on) or stale.
CREATE FUNCTION awa.fail(job_id bigint, run_lease bigint, receipt_id bigint, error text)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_fail'
LANGUAGE C VOLATILE SECURITY DEFINER;

-- ---------------------------------------------------------------------------
-- Operators: cancel, inspect, dead-letter queue, queue settings
-- ---------------------------------------------------------------------------
-- The document awa.get_job returns.
CREATE FUNCTION awa._job_document(job_id bigint, queue text, priority int, kind text, args jsonb, state text,
                                  attempt int, max_attempts int, run_lease bigint, run_at timestamptz,
                                  created_at timestamptz, payload jsonb, attempted_at timestamptz,
                                  finalized_at timestamptz, progress jsonb, extra jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE sql STABLE  -- timestamps are formatted in the session's time zone
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT jsonb_build_object(
    'job_id', job_id, 'queue', queue, 'priority', priority, 'kind', kind, 'args', args, 'state', state,
    'attempt', attempt, 'max_attempts', max_attempts, 'run_lease', run_lease, 'run_at', run_at,
    'created_at', created_at, 'attempted_at', attempted_at, 'finalized_at', finalized_at,
    'errors', coalesce(payload -> 'errors', '[]'::jsonb),
    'progress', coalesce(progress, payload -> 'progress'),
    'metadata', coalesce(payload -> 'metadata', '{}'::jsonb),
    'tags', coalesce(payload -> 'tags', '[]'::jsonb)) || coalesce(extra, '{}'::jsonb)
$$;

-- One job wherever it is: deferred (scheduled, retryable), dead-lettered, or in
-- the queue ring (available, running, completed, failed, cancelled). NULL when
-- unknown (never enqueued, purged, or reclaimed with its ring slot). STABLE:
-- every read is under one snapshot, so a job is seen in exactly one state.
CREATE FUNCTION awa._get_job(job_id bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    p_job_id bigint := $1;
    d        record;
    r        record;
    b        record;
    c        record;
    x        record;
    s        record;
    idx      int;
BEGIN
    IF p_job_id IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT * INTO d FROM awa.deferred_jobs j WHERE j.job_id = p_job_id;
    IF FOUND THEN
        RETURN awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state, d.attempt,
                                 d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL, NULL, NULL);
    END IF;
    SELECT * INTO d FROM awa.dlq_entries j WHERE j.job_id = p_job_id;
    IF FOUND THEN
        RETURN awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, 'dlq', d.attempt,
                                 d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL, d.dlq_at,
                                 NULL, jsonb_build_object('dlq_reason', d.dlq_reason));
    END IF;
    -- Finished, and its queue-ring slot reclaimed: kept in the history ring
    -- for awa.history_retention.
    SELECT * INTO d FROM awa.job_history h WHERE h.job_id = p_job_id;
    IF FOUND THEN
        RETURN awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state, d.attempt,
                                 d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, d.attempted_at,
                                 d.finalized_at, NULL);
    END IF;
    -- Cancelled while deferred: a synthetic done row (lane_seq = -job_id) is its
    -- final state, newer than any ready row an earlier attempt left.
    SELECT * INTO d FROM awa.done_entries e WHERE e.job_id = p_job_id AND e.lane_seq = -p_job_id;
    IF FOUND THEN
        RETURN awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state, d.attempt,
                                 d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL,
                                 d.finalized_at, NULL);
    END IF;
    -- The latest incarnation in the queue ring (each promotion appends a row
    -- with a higher run_lease).
    SELECT * INTO r FROM awa.ready_entries e WHERE e.job_id = p_job_id
     ORDER BY e.run_lease DESC, e.ready_generation DESC LIMIT 1;
    IF NOT FOUND THEN
        SELECT * INTO d FROM awa.done_entries e WHERE e.job_id = p_job_id ORDER BY e.finalized_at DESC LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        RETURN awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state, d.attempt,
                                 d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL,
                                 d.finalized_at, NULL);
    END IF;
    SELECT * INTO d FROM awa.done_entries e
     WHERE e.queue = r.queue AND e.priority = r.priority AND e.lane_seq = r.lane_seq AND e.ready_slot = r.ready_slot;
    IF FOUND THEN
        -- failed or cancelled (cancelled before its claim, or while it ran)
        RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, d.state, d.attempt,
                                 r.max_attempts, d.run_lease, r.run_at, r.created_at, d.payload, NULL,
                                 d.finalized_at, NULL);
    END IF;
    -- A tombstone without its done row (cancelled while available): not
    -- written by this release, read for safety.
    SELECT t.tombstoned_at INTO x FROM awa.ready_tombstones t
     WHERE t.queue = r.queue AND t.priority = r.priority AND t.lane_seq = r.lane_seq
       AND t.ready_slot = r.ready_slot AND t.ready_generation = r.ready_generation;
    IF FOUND THEN
        RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'cancelled', r.attempt,
                                 r.max_attempts, r.run_lease, r.run_at, r.created_at, r.payload, NULL,
                                 x.tombstoned_at, NULL);
    END IF;
    SELECT a.batch_id, a.claim_slot INTO b FROM awa.ready_claim_attempt_batches a
     WHERE a.queue = r.queue AND a.priority = r.priority AND a.ready_slot = r.ready_slot
       AND a.ready_generation = r.ready_generation AND a.next_lane_seq > r.lane_seq
       AND a.first_lane_seq <= r.lane_seq AND a.lane_ranges @> r.lane_seq;
    IF NOT FOUND THEN
        RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'available', r.attempt,
                                 r.max_attempts, r.run_lease, r.run_at, r.created_at, r.payload, NULL, NULL, NULL);
    END IF;
    -- The claim batch, in the slot it was written to or the one a prune
    -- carried it to while it was open (docs/maintenance.md §3.5).
    SELECT * INTO c FROM awa.lease_claim_batches k WHERE k.batch_id = b.batch_id;
    IF NOT FOUND THEN
        -- Its claim-ring slot was pruned, which needs every claim in it
        -- closed. A completion left its history in the queue ring (a slot
        -- the claim ring outlives it by less); every other end wrote a
        -- deferred, done or DLQ row found above, or a newer ready row.
        SELECT k.completed_at INTO x FROM awa.receipt_completion_batches k
         WHERE k.claim_batch_id = b.batch_id AND k.ready_slot = r.ready_slot AND p_job_id = ANY (k.job_ids);
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'completed', r.attempt + 1,
                                 r.max_attempts, r.run_lease + 1, r.run_at, r.created_at, r.payload, NULL,
                                 x.completed_at, NULL);
    END IF;
    idx := array_position(c.job_ids, p_job_id);
    SELECT k.outcome, k.closed_at INTO x FROM awa.lease_claim_closure_batches k
     WHERE k.claim_batch_id = b.batch_id AND k.claim_slot = c.claim_slot AND (idx - 1) = ANY (k.claim_indexes);
    IF NOT FOUND THEN
        SELECT * INTO s FROM awa.attempt_state t WHERE t.job_id = p_job_id AND t.run_lease = r.run_lease + 1;
        RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'running', c.attempts[idx],
                                 r.max_attempts, r.run_lease + 1, r.run_at, r.created_at, r.payload, c.claimed_at,
                                 NULL, s.progress,
                                 jsonb_build_object('deadline_at', c.deadline_at, 'heartbeat_at', s.heartbeat_at));
    END IF;
    IF x.outcome = 'dlq' THEN
        RETURN NULL;  -- dead-lettered, then purged
    END IF;
    RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, x.outcome, c.attempts[idx],
                             r.max_attempts, r.run_lease + 1, r.run_at, r.created_at, r.payload, c.claimed_at,
                             x.closed_at, NULL);
END
$$;

-- Holds every ring table a reader scans (ACCESS SHARE, to the end of the
-- transaction): a prune that holds one of them is waited for, and a prune not
-- yet started cannot truncate what the reader reads. A reader calls it before
-- its snapshot is taken, so that the snapshot follows any prune it waited for:
-- TRUNCATE is not MVCC-safe, and an older snapshot would see a pruned slot
-- empty without seeing the rows the prune carried or copied to history.
CREATE FUNCTION awa._hold_rings()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    LOCK TABLE awa.ready_entries, awa.ready_tombstones, awa.ready_claim_attempt_batches, awa.done_entries,
               awa.receipt_completion_batches, awa.lease_claims, awa.lease_claim_batches,
               awa.lease_claim_closures, awa.lease_claim_closure_batches, awa.job_history
          IN ACCESS SHARE MODE;
END
$$;

-- One job wherever it is (awa._get_job), read under one snapshot taken after
-- the ring tables are held (awa._hold_rings): a prune in progress is waited
-- for, so a job it carries or copies to the history ring is seen where it
-- went (found in review of issue 9: a call waiting on a prune saw neither).
CREATE FUNCTION awa.get_job(job_id bigint)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    IF $1 IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM awa._hold_rings();
    RETURN awa._get_job($1);
END
$$;

-- Cancels a job: 'cancelled' (it was available, scheduled or retryable),
-- 'cancel_requested' (it was running: the attempt is closed, so the worker's
-- completion is refused and its next heartbeat answers cancel_requested),
-- 'already_finished' or 'not_found'. An available job is hidden by a ready
-- tombstone (src/pg/fn_tombstone.cpp), never by changing its ready row.
CREATE FUNCTION awa.cancel(job_id bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    p_job_id bigint := $1;
    d        record;     -- the job's body: a deferred row or a ready row
    r        record;
    b        record;
    a        record;
    ring     record;
    outcome  text;
    idx      int;
    -- where the cancelled terminal row goes
    slot     smallint;
    gen      bigint;
    lane     bigint;
    lease    bigint;
    tries    smallint;
    batch_slot int;  -- the claim slot holding the claim batch
BEGIN
    IF p_job_id IS NULL THEN
        RAISE EXCEPTION 'job_id must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the job_id awa.enqueue returned.';
    END IF;
    -- A job can move while we look (promotion, retry); each round looks again.
    FOR round IN 1 .. 100 LOOP
        DELETE FROM awa.deferred_jobs j WHERE j.job_id = p_job_id RETURNING j.* INTO d;
        IF FOUND THEN
            -- Scheduled or retryable: a synthetic terminal row in the current queue slot.
            SELECT q.slot, q.generation INTO ring FROM awa.queue_ring_rotations q ORDER BY q.generation DESC LIMIT 1;
            slot := ring.slot; gen := ring.generation; lane := -d.job_id; lease := d.run_lease; tries := d.attempt;
            PERFORM awa._count_move(d.queue, d.state, 'cancelled');
            outcome := 'cancelled';
            EXIT;
        END IF;
        IF EXISTS (SELECT FROM awa.dlq_entries j WHERE j.job_id = p_job_id)
           OR EXISTS (SELECT FROM awa.job_history h WHERE h.job_id = p_job_id)
           OR EXISTS (SELECT FROM awa.done_entries e WHERE e.job_id = p_job_id AND e.lane_seq = -p_job_id) THEN
            RETURN 'already_finished';  -- dead-lettered, in the history ring, or cancelled while deferred
        END IF;
        SELECT * INTO r FROM awa.ready_entries e WHERE e.job_id = p_job_id
         ORDER BY e.run_lease DESC, e.ready_generation DESC LIMIT 1;
        IF NOT FOUND THEN
            IF EXISTS (SELECT FROM awa.done_entries e WHERE e.job_id = p_job_id) THEN
                RETURN 'already_finished';
            END IF;
            RETURN 'not_found';
        END IF;
        IF EXISTS (SELECT FROM awa.done_entries e WHERE e.queue = r.queue AND e.priority = r.priority
                      AND e.lane_seq = r.lane_seq AND e.ready_slot = r.ready_slot) THEN
            RETURN 'already_finished';
        END IF;
        d := r;
        slot := r.ready_slot; gen := r.ready_generation; lane := r.lane_seq;

        -- Available: a tombstone (src/pg/fn_tombstone.cpp closes the race with claims).
        outcome := awa._tombstone(r.queue, r.priority, r.lane_seq, r.ready_slot, r.ready_generation, r.job_id);
        IF outcome = 'tombstoned' THEN
            lease := r.run_lease; tries := r.attempt;
            outcome := 'cancelled';
            EXIT;
        ELSIF outcome = 'already_tombstoned' THEN
            RETURN 'already_finished';
        END IF;

        -- Claimed: close the attempt that took this ready row.
        SELECT x.batch_id, x.claim_slot INTO b FROM awa.ready_claim_attempt_batches x
         WHERE x.queue = r.queue AND x.priority = r.priority AND x.ready_slot = r.ready_slot
           AND x.ready_generation = r.ready_generation AND x.next_lane_seq > r.lane_seq
           AND x.first_lane_seq <= r.lane_seq AND x.lane_ranges @> r.lane_seq;
        IF NOT FOUND AND current_setting('transaction_isolation') <> 'read committed' THEN
            -- The claim committed after this transaction's snapshot was taken.
            RAISE EXCEPTION 'could not cancel the job: it was claimed by a transaction this snapshot cannot see'
                USING ERRCODE = 'serialization_failure', DETAIL = format('Job %s.', p_job_id),
                      HINT = 'Retry the transaction.';
        END IF;
        IF NOT FOUND THEN
            RETURN 'already_finished';
        END IF;
        -- The claim batch, where it was written or where a prune carried it
        -- while it was open (docs/maintenance.md §3.5).
        SELECT array_position(k.job_ids, p_job_id), k.claim_slot INTO idx, batch_slot FROM awa.lease_claim_batches k
         WHERE k.batch_id = b.batch_id;
        IF idx IS NULL THEN
            RETURN 'already_finished';
        END IF;
        -- Already ended for good (completed, failed, cancelled, dead-lettered):
        -- answer without the claim batch's lock, which a transaction working
        -- on another job of the batch may hold for long. An attempt closed as
        -- retryable or scheduled moved on (a deferred row, found next round);
        -- an open one is closed under the lock below.
        IF EXISTS (SELECT FROM awa.lease_claim_closure_batches x
                    WHERE x.claim_batch_id = b.batch_id AND x.claim_slot = batch_slot
                      AND (idx - 1) = ANY (x.claim_indexes)
                      AND x.outcome IN ('completed', 'failed', 'cancelled', 'dlq')) THEN
            RETURN 'already_finished';
        END IF;
        SELECT * INTO a FROM awa._attempt(p_job_id, r.run_lease + 1, awa._receipt(b.batch_id, idx - 1, b.claim_slot),
                                          'cancelled');
        IF a.status = 'closed_now' THEN
            lease := r.run_lease + 1; tries := a.attempt;
            outcome := 'cancel_requested';
            EXIT;
        END IF;
        IF a.status = 'closed' AND a.closed_outcome IN ('retryable', 'scheduled') THEN
            CONTINUE;  -- retried or snoozed meanwhile: cancel it where it went
        END IF;
        RETURN 'already_finished';
    END LOOP;
    IF outcome IS NULL OR outcome NOT IN ('cancelled', 'cancel_requested') THEN
        RAISE EXCEPTION 'job % kept changing state while it was being cancelled', p_job_id
            USING ERRCODE = 'lock_not_available', HINT = 'Try again.';
    END IF;
    INSERT INTO awa.done_entries (ready_slot, ready_generation, queue, priority, lane_seq, job_id, run_lease, attempt,
                                  kind, state, finalized_at, args, max_attempts, run_at, created_at, unique_key,
                                  payload)
    VALUES (slot, gen, d.queue, d.priority, lane, p_job_id, lease, tries, d.kind, 'cancelled', clock_timestamp(),
            d.args, d.max_attempts, d.run_at, d.created_at, d.unique_key, d.payload);
    -- A running job's key was freed when its attempt closed; the others' here.
    DELETE FROM awa.job_unique_claims u WHERE u.job_id = p_job_id AND (u.unique_states & 64) = 0;
    RETURN outcome;
END
$$;

-- One row per dead-lettered job.
CREATE VIEW awa.dlq AS
SELECT d.job_id, d.queue, d.kind, d.args, d.attempt, coalesce(d.payload -> 'errors', '[]'::jsonb) AS errors,
       d.dlq_at, d.dlq_reason, d.priority, d.max_attempts, d.run_lease, d.created_at
  FROM awa.dlq_entries d;

-- Moves dead-lettered jobs back to available with fresh attempts. Their
-- run_lease continues from the last attempt (never reused). A unique key
-- another job took meanwhile raises 23505 and nothing moves.
CREATE FUNCTION awa.dlq_retry(job_ids bigint[])
RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    moved bigint[];
    q     record;
BEGIN
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'job_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the job ids to retry, as listed by awa.dlq.';
    END IF;
    WITH gone AS (
        DELETE FROM awa.dlq_entries d WHERE d.job_id = ANY (job_ids) RETURNING d.*
    ), parked AS (
        INSERT INTO awa.deferred_jobs (job_id, queue, priority, kind, args, state, run_at, run_lease, attempt,
                                       max_attempts, created_at, unique_key, unique_states, payload)
        SELECT g.job_id, g.queue, g.priority, g.kind, g.args, 'scheduled', clock_timestamp(), g.run_lease, 0,
               g.max_attempts, g.created_at, g.unique_key, g.unique_states, nullif(g.payload - 'progress', '{}')
          FROM gone g
        RETURNING queue, job_id
    )
    SELECT array_agg(p.job_id) INTO moved FROM parked p;
    IF moved IS NULL THEN
        RETURN 0;
    END IF;
    FOR q IN SELECT j.queue, count(*) AS n FROM awa.deferred_jobs j WHERE j.job_id = ANY (moved) GROUP BY j.queue LOOP
        PERFORM awa._count_move(q.queue, 'dlq', 'scheduled', q.n);
    END LOOP;
    RETURN awa._promote_jobs(moved);
END
$$;

-- Deletes dead-lettered jobs for good.
CREATE FUNCTION awa.dlq_purge(job_ids bigint[])
RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    q     record;
    total int := 0;
BEGIN
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'job_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the job ids to purge, as listed by awa.dlq.';
    END IF;
    FOR q IN
        WITH gone AS (DELETE FROM awa.dlq_entries d WHERE d.job_id = ANY (job_ids) RETURNING d.queue, d.job_id),
             freed AS (DELETE FROM awa.job_unique_claims u USING gone g WHERE u.job_id = g.job_id)
        SELECT g.queue, count(*) AS n FROM gone g GROUP BY g.queue
    LOOP
        PERFORM awa._count_move(q.queue, 'dlq', NULL, q.n);
        total := total + q.n;
    END LOOP;
    RETURN total;
END
$$;

CREATE FUNCTION awa._require_queue(queue text)
RETURNS void
LANGUAGE plpgsql VOLATILE  -- raises: never evaluated ahead of time
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    -- The same rules and messages as the C functions (src/core/validate.cpp).
    IF queue IS NULL THEN
        RAISE EXCEPTION 'queue must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass a non-empty name.';
    END IF;
    IF length(queue) = 0 THEN
        RAISE EXCEPTION 'queue must not be empty' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass a non-empty name.';
    END IF;
    IF length(queue) > 200 THEN
        RAISE EXCEPTION 'queue is % characters long; at most 200 are allowed', length(queue)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Use a shorter name.';
    END IF;
END
$$;

-- Creates or changes a queue's settings; NULL leaves a setting as it is.
CREATE FUNCTION awa.configure_queue(queue text, dlq_enabled boolean DEFAULT NULL,
                                    aging_interval interval DEFAULT NULL,
                                    default_deadline interval DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    PERFORM awa._require_queue(queue);
    IF aging_interval < interval '0' THEN
        RAISE EXCEPTION 'aging_interval must not be negative' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass 0 for strict priorities, or how long a waiting job takes to gain one priority level.';
    END IF;
    IF default_deadline <= interval '0' THEN
        RAISE EXCEPTION 'default_deadline must be positive' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass how long an attempt may run, such as interval ''5 minutes''.';
    END IF;
    INSERT INTO awa.queue_meta AS m (queue, dlq_enabled, aging_interval, default_deadline)
    VALUES ($1, coalesce($2, false), coalesce($3, interval '60 seconds'), $4)
    ON CONFLICT ON CONSTRAINT queue_meta_pkey DO UPDATE
       SET dlq_enabled = coalesce($2, m.dlq_enabled),
           aging_interval = coalesce($3, m.aging_interval),
           default_deadline = coalesce($4, m.default_deadline),
           updated_at = now();
    PERFORM awa._queue_meta_changed(queue);
END
$$;

-- A paused queue is neither claimed nor promoted; enqueue goes on.
CREATE FUNCTION awa.pause_queue(queue text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    PERFORM awa._require_queue(queue);
    INSERT INTO awa.queue_meta AS m (queue, paused, paused_at) VALUES ($1, true, now())
    ON CONFLICT ON CONSTRAINT queue_meta_pkey DO UPDATE
       SET paused = true, paused_at = coalesce(m.paused_at, now()), updated_at = now();
    PERFORM awa._queue_meta_changed(queue);
END
$$;

CREATE FUNCTION awa.resume_queue(queue text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    PERFORM awa._require_queue(queue);
    INSERT INTO awa.queue_meta AS m (queue, paused) VALUES ($1, false)
    ON CONFLICT ON CONSTRAINT queue_meta_pkey DO UPDATE
       SET paused = false, paused_at = NULL, updated_at = now();
    PERFORM awa._queue_meta_changed(queue);
END
$$;

-- queue_counts' columns counted from the tables (cost grows with the backlog).
CREATE FUNCTION awa.queue_counts_exact(queue text DEFAULT NULL)
RETURNS TABLE (queue text, available bigint, scheduled bigint, retryable bigint, running bigint,
               completed bigint, failed bigint, cancelled bigint, dlq bigint)
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT awa._require_queue($1) WHERE $1 IS NOT NULL;
-- VOLATILE: the count below takes its snapshot after the ring tables are held
-- (awa._hold_rings), so counting during a prune misses nothing it carries or
-- copies to the history ring.
SELECT awa._hold_rings();
SELECT * FROM awa._queue_counts_scan($1)
UNION ALL
SELECT $1, 0, 0, 0, 0, 0, 0, 0, 0
 WHERE $1 IS NOT NULL AND NOT EXISTS (SELECT FROM awa._queue_counts_scan($1))
$$;

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
CREATE FUNCTION awa._task_names()
RETURNS text[] AS 'MODULE_PATHNAME', 'awa_internal_task_names' LANGUAGE C IMMUTABLE;
CREATE FUNCTION awa._rotation_begin()
RETURNS void AS 'MODULE_PATHNAME', 'awa_internal_rotation_begin' LANGUAGE C VOLATILE;

CREATE FUNCTION awa._enqueue_generation_in_use(generation bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'awa_internal_enqueue_generation_in_use' LANGUAGE C VOLATILE;

CREATE FUNCTION awa._note_outcome(task text, outcome text)
RETURNS void AS 'MODULE_PATHNAME', 'awa_internal_note_outcome' LANGUAGE C VOLATILE;

CREATE FUNCTION awa._ensure_counters()
RETURNS text AS 'MODULE_PATHNAME', 'awa_internal_ensure_counters' LANGUAGE C VOLATILE;

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


-- A ring's position: current generation and slot, slot count.
CREATE FUNCTION awa._ring_position(ring text, OUT generation bigint, OUT slot int, OUT slot_count int)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    EXECUTE format('SELECT r.generation, r.slot, s.slot_count FROM awa.%I r, awa.%I s
                     ORDER BY r.generation DESC LIMIT 1', ring || '_ring_rotations', ring || '_ring_state')
       INTO generation, slot, slot_count;
END
$$;

-- True when no child of the slot holds a row.
CREATE FUNCTION awa._slot_is_empty(ring text, slot int)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    child text;
    found boolean;
BEGIN
    FOREACH child IN ARRAY awa._slot_children(ring, slot) LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', child) INTO found;
        IF found THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END
$$;

-- True when no child of the slot has a block on disk (it was truncated and
-- nothing was written since): prune has nothing to do and must not truncate
-- again (each TRUNCATE swaps the files and invalidates every backend's plans).
CREATE FUNCTION awa._slot_has_no_blocks(ring text, slot int)
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT coalesce(bool_and(pg_relation_size(c::regclass) = 0), true) FROM unnest(awa._slot_children(ring, slot)) c
$$;

-- Why a queue-ring slot cannot be truncated now, or NULL when it can. What is
-- live in the slot never stops it: available rows, the rows of open attempts
-- and the evidence the claim walk still needs are carried forward into the
-- newest generation by awa._carry_queue_slot in the truncating transaction
-- (docs/maintenance.md §3.5). Only what cannot be carried stops it:
--  (d) an enqueue is between reserving lane_seqs for a generation <= the
--      target and inserting its rows (it could write into the slot after the
--      truncation);
--  (a) a lease references the slot (the lease ring is not written in 0.6);
--  row-local claims (awa.lease_claims, not written in 0.6) of its rows are
--      open.
-- Claims and readers that hold one of the slot's children keep the prune's
-- lock from being granted (outcome blocked) instead.
CREATE FUNCTION awa._queue_slot_blocker(slot int, generation bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    n bigint;
BEGIN
    -- (d) first: it costs one pass over shared memory.
    IF awa._enqueue_generation_in_use(generation) THEN
        RETURN 'an enqueue into the generation is in flight';
    END IF;
    SELECT count(*) INTO n FROM awa.leases l WHERE l.ready_slot = slot;
    IF n > 0 THEN
        RETURN format('%s leases reference the slot', n);
    END IF;
    SELECT count(*) INTO n
      FROM awa.lease_claims c
     WHERE c.ready_slot = slot
       AND NOT EXISTS (SELECT 1 FROM awa.lease_claim_closures x
                        WHERE x.job_id = c.job_id AND x.run_lease = c.run_lease AND x.claim_slot = c.claim_slot);
    IF n > 0 THEN
        RETURN format('%s row-local claims of its jobs are open', n);
    END IF;
    RETURN NULL;
END
$$;

-- Carries what is live in queue-ring slot `slot` (generation `generation`)
-- forward into the newest generation, before the slot is truncated in the
-- same transaction (docs/maintenance.md §3.5). Run by the queue prune under
-- the ring lock and the slot's ACCESS EXCLUSIVE lock, after idle lanes'
-- cursors were advanced and the slot's finished jobs were copied to the
-- history ring. Carried, with every column but the slot and generation
-- unchanged (lane_seq, job_id, run_lease, attempt, args, payload, unique key):
--   * available rows: beyond their lane's claim cursor, handed out by no
--     claim and not tombstoned (idle lanes, paused queues, backlogs);
--   * the claims (attempt batches) of open attempts (long-running jobs) with
--     every row they cover, so their heartbeats and their end (complete,
--     retry, fail, cancel, rescue) find their body: the attempt's claim still
--     names the old slot, and src/pg/attempts.cpp looks the row up where it
--     went;
-- with one ready segment per run of consecutive carried lanes, so claims see
-- them committed. Nothing else in the slot is live. A lane beyond its cursor
-- that is not carried (cancelled, or claimed and closed) becomes a hole that
-- the claim walk proves dead like a rolled-back enqueue (no row in any
-- generation, no reservation open): its job's state is in the history ring, a
-- deferred row or the DLQ. Returns how many rows, segments and claims were
-- carried.
CREATE FUNCTION awa._carry_queue_slot(slot int, generation bigint)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    carried jsonb;
BEGIN
    pos := awa._ring_position('queue');
    IF pos.slot = slot THEN
        RAISE EXCEPTION 'awa: queue slot % is the current one', slot USING ERRCODE = 'internal_error';
    END IF;
    EXECUTE format($q$
        WITH lanes AS MATERIALIZED (
            SELECT l.queue, l.priority, awa.cursor_value(l.claim_seq) AS cursor
              FROM awa.queue_lanes l
             WHERE EXISTS (SELECT 1 FROM awa.%1$I g WHERE g.queue = l.queue AND g.priority = l.priority)
        ), spent AS MATERIALIZED (
            SELECT a.queue, a.priority, range_agg(a.lane_ranges) AS ranges FROM awa.%2$I a GROUP BY a.queue, a.priority
        ), open_batches AS MATERIALIZED (
            -- Claims with an attempt still open (closures fewer than claims);
            -- most batches are closed whole and are passed over here.
            SELECT c.batch_id, c.claim_slot, c.job_ids, c.run_leases
              FROM awa.lease_claim_batches c
             WHERE c.ready_generation <= $3
               AND c.claimed_count > (SELECT coalesce(sum(x.closed_count), 0) FROM awa.lease_claim_closure_batches x
                                       WHERE x.claim_batch_id = c.batch_id AND x.claim_slot = c.claim_slot)
        ), open_attempts AS MATERIALIZED (
            SELECT c.job_ids[i] AS job_id, c.run_leases[i] AS run_lease
              FROM open_batches c CROSS JOIN LATERAL generate_subscripts(c.job_ids, 1) AS i
             WHERE NOT EXISTS (SELECT 1 FROM awa.lease_claim_closure_batches x
                                WHERE x.claim_batch_id = c.batch_id AND x.claim_slot = c.claim_slot
                                  AND (i - 1) = ANY (x.claim_indexes))
        ), carried_evidence AS MATERIALIZED (
            -- The claims of open attempts on rows of the slot; every row they
            -- cover travels with them, so that ready rows - handed-out lanes -
            -- tombstones stays the available count of every slot
            -- (awa.queue_counts_exact). Probes from the (few) open attempts.
            SELECT DISTINCT ON (a.batch_id) a.*
              FROM open_attempts o
              JOIN LATERAL (SELECT e.queue, e.priority, e.lane_seq FROM awa.%3$I e
                             WHERE e.job_id = o.job_id AND e.run_lease + 1 = o.run_lease LIMIT 1) r ON true
              JOIN LATERAL (SELECT b.* FROM awa.%2$I b
                             WHERE b.queue = r.queue AND b.priority = r.priority AND b.next_lane_seq > r.lane_seq
                               AND b.first_lane_seq <= r.lane_seq AND b.lane_ranges @> r.lane_seq
                             ORDER BY b.next_lane_seq LIMIT 1) a ON true
        ), carried_spent AS MATERIALIZED (
            SELECT e.queue, e.priority, range_agg(e.lane_ranges) AS ranges FROM carried_evidence e
             GROUP BY e.queue, e.priority
        ), moving AS MATERIALIZED (
            SELECT r.*, o.job_id IS NOT NULL AS running
              FROM awa.%3$I r
              JOIN lanes l ON l.queue = r.queue AND l.priority = r.priority
              LEFT JOIN spent s ON s.queue = r.queue AND s.priority = r.priority
              LEFT JOIN carried_spent cs ON cs.queue = r.queue AND cs.priority = r.priority
              LEFT JOIN open_attempts o ON o.job_id = r.job_id AND o.run_lease = r.run_lease + 1
             WHERE coalesce(cs.ranges @> r.lane_seq, false)
                OR (r.lane_seq > l.cursor
                    AND NOT coalesce(s.ranges @> r.lane_seq, false)
                    AND NOT EXISTS (SELECT 1 FROM awa.%4$I t
                                     WHERE t.queue = r.queue AND t.priority = r.priority AND t.lane_seq = r.lane_seq))
        ), ready AS (
            INSERT INTO awa.%5$I (ready_slot, ready_generation, queue, priority, lane_seq, job_id, run_lease, attempt,
                                  max_attempts, kind, args, run_at, created_at, attempted_at, unique_key,
                                  unique_states, payload)
            SELECT $1, $2, m.queue, m.priority, m.lane_seq, m.job_id, m.run_lease, m.attempt, m.max_attempts, m.kind,
                   m.args, m.run_at, m.created_at, m.attempted_at, m.unique_key, m.unique_states, m.payload
              FROM moving m
            RETURNING 1
        ), segments AS (
            INSERT INTO awa.%6$I (ready_slot, ready_generation, queue, priority, first_lane_seq, next_lane_seq,
                                  first_run_at, created_at, origin_generation)
            SELECT $1, $2, queue, priority, min(lane_seq), max(lane_seq) + 1,
                   (array_agg(run_at ORDER BY lane_seq))[1], min(created_at), min(origin)
              FROM (SELECT m.queue, m.priority, m.lane_seq, m.run_at, m.created_at,
                           (SELECT g.origin_generation FROM awa.%1$I g
                             WHERE g.queue = m.queue AND g.priority = m.priority
                               AND g.next_lane_seq > m.lane_seq AND g.first_lane_seq <= m.lane_seq
                             ORDER BY g.next_lane_seq LIMIT 1) AS origin,
                           m.lane_seq - row_number() OVER (PARTITION BY m.queue, m.priority ORDER BY m.lane_seq) AS run
                      FROM moving m) x
             GROUP BY queue, priority, run
            RETURNING 1
        ), evidence AS (
            INSERT INTO awa.%7$I (ready_slot, ready_generation, batch_id, queue, priority, claim_slot,
                                  claim_generation, first_lane_seq, next_lane_seq, claimed_count, lane_ranges,
                                  claimed_at)
            SELECT $1, $2, e.batch_id, e.queue, e.priority, e.claim_slot, e.claim_generation, e.first_lane_seq,
                   e.next_lane_seq, e.claimed_count, e.lane_ranges, e.claimed_at
              FROM carried_evidence e
            RETURNING 1
        )
        SELECT jsonb_build_object(
                   'rows', (SELECT count(*) FROM ready),
                   'running', (SELECT count(*) FROM moving WHERE running),
                   'segments', (SELECT count(*) FROM segments),
                   'evidence', (SELECT count(*) FROM evidence))$q$,
        'ready_segments_' || slot, 'ready_claim_attempt_batches_' || slot, 'ready_entries_' || slot,
        'ready_tombstones_' || slot, 'ready_entries_' || pos.slot, 'ready_segments_' || pos.slot,
        'ready_claim_attempt_batches_' || pos.slot)
      INTO carried
      USING pos.slot, pos.generation, generation;
    RETURN carried;
END
$$;

-- Why a claim-ring slot cannot be truncated now (a row-local claim in it is
-- open: awa.lease_claims is not written in 0.6), or NULL. Open compact claims
-- never stop it: awa._carry_claim_slot carries them forward.
CREATE FUNCTION awa._claim_slot_blocker(slot int)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    claimed bigint;
    closed bigint;
BEGIN
    EXECUTE format('SELECT (SELECT count(*) FROM awa.%I), (SELECT count(*) FROM awa.%I)',
                   'lease_claims_' || slot, 'lease_claim_closures_' || slot)
       INTO claimed, closed;
    IF claimed <> closed THEN
        RETURN format('%s row-local claims in the slot are open', claimed - closed);
    END IF;
    RETURN NULL;
END
$$;

-- Carries the open claims of claim-ring slot `slot` (long-running attempts)
-- forward into the current claim slot, with every closure already written
-- for them, before the slot is truncated in the same transaction
-- (docs/maintenance.md §3.5). The batch keeps its batch_id and its
-- claim_generation (whose slot is the one the worker's receipt names): a
-- completion, heartbeat or rescue that does not find the batch in the
-- receipt's slot looks in the others (src/pg/attempts.cpp).
-- Returns how many claim and closure batches were carried.
CREATE FUNCTION awa._carry_claim_slot(slot int)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    carried jsonb;
BEGIN
    pos := awa._ring_position('claim');
    IF pos.slot = slot THEN
        RAISE EXCEPTION 'awa: claim slot % is the current one', slot USING ERRCODE = 'internal_error';
    END IF;
    EXECUTE format($q$
        WITH open_batches AS MATERIALIZED (
            SELECT c.* FROM awa.%1$I c
             WHERE c.claimed_count > (SELECT coalesce(sum(x.closed_count), 0) FROM awa.%2$I x
                                       WHERE x.claim_batch_id = c.batch_id)
        ), claims AS (
            INSERT INTO awa.%3$I (claim_slot, claim_generation, batch_id, ready_slot, ready_generation, queue, priority,
                                  claimed_count, job_ids, run_leases, lane_seqs, attempts, max_attempts, deadline_at,
                                  claimed_at)
            SELECT $1, b.claim_generation, b.batch_id, b.ready_slot, b.ready_generation, b.queue, b.priority, b.claimed_count,
                   b.job_ids, b.run_leases, b.lane_seqs, b.attempts, b.max_attempts, b.deadline_at, b.claimed_at
              FROM open_batches b
            RETURNING 1
        ), closures AS (
            INSERT INTO awa.%4$I (claim_slot, batch_id, claim_batch_id, ready_slot, ready_generation, outcome,
                                  closed_count, claim_indexes, job_ids, run_leases, closed_at)
            SELECT $1, x.batch_id, x.claim_batch_id, x.ready_slot, x.ready_generation, x.outcome, x.closed_count,
                   x.claim_indexes, x.job_ids, x.run_leases, x.closed_at
              FROM awa.%2$I x
             WHERE x.claim_batch_id IN (SELECT b.batch_id FROM open_batches b)
            RETURNING 1
        )
        SELECT jsonb_build_object('claims', (SELECT count(*) FROM claims),
                                  'closures', (SELECT count(*) FROM closures))$q$,
        'lease_claim_batches_' || slot, 'lease_claim_closure_batches_' || slot,
        'lease_claim_batches_' || pos.slot, 'lease_claim_closure_batches_' || pos.slot)
      INTO carried
      USING pos.slot, pos.generation;
    RETURN carried;
END
$$;

-- Takes ACCESS EXCLUSIVE on every child of the slot, waiting at most
-- awa.prune_lock_timeout; false (and nothing locked) when a reader or writer
-- kept one of them longer. The caller's lock_timeout is restored.
CREATE FUNCTION awa._lock_slot(ring text, slot int)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    previous text := current_setting('lock_timeout');
    locked boolean := true;
BEGIN
    BEGIN
        PERFORM set_config('lock_timeout', current_setting('awa.prune_lock_timeout'), true);
        EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', array_to_string(awa._slot_children(ring, slot), ', '));
    EXCEPTION WHEN lock_not_available THEN
        locked := false;
    END;
    PERFORM set_config('lock_timeout', previous, true);
    RETURN locked;
END
$$;

-- The ring maintenance try-lock (rotate and prune of every ring, per database).
CREATE FUNCTION awa._try_ring_lock()
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$ SELECT pg_try_advisory_xact_lock(4708303813097377351) $$;

-- Available rows of a queue slot, estimated from its small tables: lanes its
-- segments cover, less the lanes its claims handed out and its tombstones.
CREATE FUNCTION awa._slot_live_rows(slot int)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT coalesce((SELECT sum(next_lane_seq - first_lane_seq) FROM awa.%I), 0)
                         - coalesce((SELECT sum(claimed_count) FROM awa.%I), 0)
                         - (SELECT count(*) FROM awa.%I)',
                   'ready_segments_' || slot, 'ready_claim_attempt_batches_' || slot, 'ready_tombstones_' || slot)
       INTO n;
    RETURN n;
END
$$;

-- The queue prune's target: the generation owning the slot the next rotation
-- enters. A sealed slot whose available rows exceed awa.carry_max_rows stays
-- out of the rotation instead (kept, while fewer than half the slots are),
-- and the next slot is looked at: copying a big backlog forward every ring
-- wrap would cost more than the slot frees (docs/maintenance.md §3.6).
-- generation NULL: the slot the next rotation enters was never used (the
-- ring has not filled); a target whose slot has no block is already pruned.
CREATE FUNCTION awa._queue_prune_target(OUT generation bigint, OUT slot int, OUT kept int[])
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    s int;
    owner bigint;
    limit_rows bigint := current_setting('awa.carry_max_rows')::bigint;
BEGIN
    pos := awa._ring_position('queue');
    kept := '{}';
    FOR k IN 1 .. pos.slot_count - 1 LOOP
        s := awa._slot_of(pos.generation + k, pos.slot_count);
        SELECT max(r.generation) INTO owner FROM awa.queue_ring_rotations r WHERE r.slot = s;
        IF owner IS NULL OR awa._slot_has_no_blocks('queue', s) THEN
            generation := owner;
            slot := s;
            RETURN;
        END IF;
        IF cardinality(kept) < pos.slot_count / 2 - 1 AND awa._slot_live_rows(s) > limit_rows THEN
            kept := kept || s;
            CONTINUE;
        END IF;
        generation := owner;
        slot := s;
        RETURN;
    END LOOP;
END
$$;

-- The generations that own a queue slot (newest per slot), oldest first: the
-- queue ring's live generations.
CREATE FUNCTION awa._queue_live_generations()
RETURNS bigint[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT array_agg(g ORDER BY g)
  FROM awa.queue_ring_slots s,
       LATERAL (SELECT max(r.generation) AS g FROM awa.queue_ring_rotations r WHERE r.slot = s.slot) x
 WHERE g IS NOT NULL
$$;

-- Rotation: appends (generation + 1, next slot) to the ring's ledger with
-- ON CONFLICT DO NOTHING (a compare-and-swap; no row is ever updated), only
-- when the incoming slot is empty (else the ring is full: prune is behind)
-- and some slot of the ring holds a row (an idle ring does not rotate).
CREATE FUNCTION awa._rotate(ring text, OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    next_slot int;
    step int;
    kept int[] := '{}';
    family text;
    busy boolean := false;
    n bigint;
BEGIN
    IF NOT awa._try_ring_lock() THEN
        outcome := 'skipped_busy';
        detail := jsonb_build_object('reason', 'another maintenance step holds the ring lock');
        RETURN;
    END IF;
    pos := awa._ring_position(ring);
    detail := jsonb_build_object('generation', pos.generation, 'slot', pos.slot);
    -- The next generation enters the next slot; in the queue ring, past the
    -- slots kept out of the rotation for their many live rows (their
    -- generation numbers are skipped, so a generation's slot stays
    -- generation % slot_count; docs/maintenance.md §3.6).
    IF ring = 'queue' THEN
        SELECT t.kept INTO kept FROM awa._queue_prune_target() t;
    END IF;
    step := 1;
    LOOP
        next_slot := awa._slot_of(pos.generation + step, pos.slot_count);
        EXIT WHEN awa._slot_is_empty(ring, next_slot);
        IF NOT next_slot = ANY (kept) OR step = pos.slot_count - 1 THEN
            outcome := 'skipped_busy';
            detail := detail || jsonb_build_object('reason', 'the incoming slot is not empty: prune is behind',
                                                   'incoming_slot', next_slot);
            RETURN;
        END IF;
        step := step + 1;
    END LOOP;
    -- The ring's partitioned parents: slot 0's children without their suffix.
    FOREACH family IN ARRAY (SELECT array_agg(regexp_replace(c, '_0$', '')) FROM unnest(awa._slot_children(ring, 0)) c) LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', family) INTO busy;
        EXIT WHEN busy;
    END LOOP;
    IF NOT busy THEN
        outcome := 'skipped_idle';
        RETURN;
    END IF;
    PERFORM awa._rotation_begin();
    EXECUTE format('INSERT INTO awa.%I (generation, slot, rotated_at) VALUES ($1, $2, clock_timestamp())
                    ON CONFLICT (generation) DO NOTHING', ring || '_ring_rotations')
      USING pos.generation + step, next_slot;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        outcome := 'skipped_busy';
        detail := detail || jsonb_build_object('reason', 'another rotation appended this generation');
        RETURN;
    END IF;
    outcome := 'rotated';
    detail := jsonb_build_object('generation', pos.generation + step, 'slot', next_slot);
END
$$;

-- Prune: TRUNCATE the ring's oldest sealed slot, whole, on proof that nothing
-- in it is live; the proof is made again once the slot is locked.
CREATE FUNCTION awa._prune(ring text, OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    target bigint;
    target_slot int;
    kept int[] := '{}';
    blocker text;
BEGIN
    IF NOT awa._try_ring_lock() THEN
        outcome := 'skipped_busy';
        detail := jsonb_build_object('reason', 'another maintenance step holds the ring lock');
        RETURN;
    END IF;
    pos := awa._ring_position(ring);
    -- The target is the generation whose slot the next rotation enters, so
    -- every slot keeps its rows for slot_count - 1 rotations, from the
    -- ring's first use on; in the queue ring, past the slots kept out of the
    -- rotation for their many live rows (docs/maintenance.md §3.6).
    IF ring = 'queue' THEN
        SELECT t.generation, t.slot, t.kept INTO target, target_slot, kept FROM awa._queue_prune_target() t;
    ELSE
        target := awa._prune_target(pos.generation, pos.slot_count);
        target_slot := CASE WHEN target >= 0 THEN awa._slot_of(target, pos.slot_count) END;
    END IF;
    IF target IS NULL OR target < 0 THEN
        outcome := 'skipped_idle';
        detail := jsonb_build_object('reason', 'the ring has not filled yet', 'generation', pos.generation);
        RETURN;
    END IF;
    detail := jsonb_build_object('slot', target_slot, 'generation', target);
    IF cardinality(kept) > 0 THEN
        detail := detail || jsonb_build_object('kept_slots', to_jsonb(kept));
    END IF;
    IF awa._slot_has_no_blocks(ring, target_slot) THEN
        outcome := 'already_pruned';
        RETURN;
    END IF;
    IF ring = 'queue' THEN
        -- Idle lanes' cursors lag behind their last claims until moved.
        PERFORM awa._advance_cursors();
    END IF;
    FOR pass IN 1 .. 2 LOOP
        blocker := CASE ring
                     WHEN 'queue' THEN awa._queue_slot_blocker(target_slot, target)
                     WHEN 'claim' THEN awa._claim_slot_blocker(target_slot)
                     ELSE (SELECT CASE WHEN count(*) > 0 THEN format('%s leases are live', count(*)) END
                             FROM awa.leases l WHERE l.lease_slot = target_slot)
                   END;
        IF blocker IS NOT NULL THEN
            outcome := 'skipped_active';
            detail := detail || jsonb_build_object('reason', blocker);
            RETURN;
        END IF;
        EXIT WHEN pass = 2;
        IF NOT awa._lock_slot(ring, target_slot) THEN
            outcome := 'blocked';
            detail := detail || jsonb_build_object('reason', 'a session held a child of the slot past awa.prune_lock_timeout');
            RETURN;
        END IF;
    END LOOP;
    IF ring = 'queue' THEN
        IF awa._history_retention() > interval '0' THEN
            -- The slot's finished jobs move to the history ring, where they
            -- stay counted and keep their unique keys until it reclaims them.
            detail := detail || jsonb_build_object('history_jobs', awa._keep_history(target_slot));
        ELSE
            -- No history kept: the slot's finished jobs leave the counts, and
            -- the unique keys they hold (states that include a final one) are
            -- released.
            detail := detail || jsonb_build_object('terminal_jobs', awa._forget_finished(format(
                'SELECT r.queue, ''completed'' AS state, u.job_id
                   FROM awa.%I r, unnest(r.job_ids) u(job_id)
                 UNION ALL
                 SELECT d.queue, d.state, d.job_id FROM awa.%I d WHERE d.state IN (''failed'', ''cancelled'')',
                'receipt_completion_batches_' || target_slot, 'done_entries_' || target_slot)));
        END IF;
        detail := detail || jsonb_build_object('carried', awa._carry_queue_slot(target_slot, target));
    ELSIF ring = 'claim' THEN
        detail := detail || jsonb_build_object('carried', awa._carry_claim_slot(target_slot));
    END IF;
    EXECUTE format('TRUNCATE %s', array_to_string(awa._slot_children(ring, target_slot), ', '));
    outcome := 'pruned';
END
$$;

-- awa.history_retention as an interval.
CREATE FUNCTION awa._history_retention()
RETURNS interval
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$ SELECT current_setting('awa.history_retention')::interval $$;

-- Finished jobs leave the books: `source` is a query of (queue, state,
-- job_id) rows. Records the negative counter moves per queue and state,
-- releases the unique keys those jobs hold, and returns {state: jobs}.
CREATE FUNCTION awa._forget_finished(source text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    q record;
    moved jsonb := '{}';
BEGIN
    FOR q IN EXECUTE format('SELECT queue, state, count(*) AS n FROM (%s) t GROUP BY queue, state', source) LOOP
        PERFORM awa._count_move(q.queue, q.state, NULL, q.n);
        moved := jsonb_set(moved, ARRAY[q.state], to_jsonb(coalesce((moved ->> q.state)::bigint, 0) + q.n));
    END LOOP;
    IF EXISTS (SELECT 1 FROM awa.job_unique_claims) THEN
        EXECUTE format('DELETE FROM awa.job_unique_claims u WHERE u.job_id IN (SELECT t.job_id FROM (%s) t)', source);
    END IF;
    RETURN moved;
END
$$;

-- Copies the finished jobs of queue-ring slot `slot` (whatever get_job would
-- return for them) into the current history slot; returns how many. Run by
-- the queue prune under the ring lock, after its proof and before its
-- TRUNCATE, in the same transaction: a finished job is always visible in one
-- of the two places.
CREATE FUNCTION awa._keep_history(slot int)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    n bigint;
BEGIN
    pos := awa._ring_position('history');
    EXECUTE format($q$
        INSERT INTO awa.job_history
               (history_slot, job_id, queue, priority, kind, args, state, attempt, max_attempts, run_lease,
                run_at, created_at, attempted_at, finalized_at, unique_key, payload)
        SELECT $1, r.job_id, r.queue, r.priority, r.kind, r.args, 'completed', r.attempt + 1, r.max_attempts,
               c.run_lease, r.run_at, r.created_at, a.claimed_at, c.completed_at, r.unique_key, r.payload
          FROM (SELECT b.queue, b.priority, b.claim_batch_id, b.completed_at, u.run_lease, u.lane_seq
                  FROM awa.%1$I b, unnest(b.run_leases, b.lane_seqs) u(run_lease, lane_seq)) c
          -- One primary-key probe per job (LIMIT 1 keeps the planner from
          -- hashing a lane's whole slot once per completion batch).
          JOIN LATERAL (SELECT * FROM awa.%2$I e
                         WHERE e.queue = c.queue AND e.priority = c.priority AND e.lane_seq = c.lane_seq LIMIT 1) r
            ON true
          LEFT JOIN LATERAL (SELECT x.claimed_at FROM awa.%3$I x WHERE x.batch_id = c.claim_batch_id LIMIT 1) a
            ON true
        UNION ALL
        SELECT $1, d.job_id, d.queue, d.priority, coalesce(r.kind, d.kind), coalesce(r.args, d.args), d.state,
               d.attempt, coalesce(r.max_attempts, d.max_attempts), d.run_lease, coalesce(r.run_at, d.run_at),
               coalesce(r.created_at, d.created_at), NULL, d.finalized_at, coalesce(r.unique_key, d.unique_key),
               d.payload
          FROM awa.%4$I d
          LEFT JOIN awa.%2$I r ON r.queue = d.queue AND r.priority = d.priority AND r.lane_seq = d.lane_seq
         WHERE d.state IN ('failed', 'cancelled')$q$,
        'receipt_completion_batches_' || slot, 'ready_entries_' || slot, 'ready_claim_attempt_batches_' || slot,
        'done_entries_' || slot)
      USING pos.slot;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- The history ring's step: reclaims (TRUNCATE) every sealed history slot
-- whose rows are all older than awa.history_retention (its generation was
-- sealed, by the next rotation, that long ago), recording their counter moves
-- and releasing their unique keys; then rotates when the current slot has
-- been open for retention / (slot_count - 2) and holds a row, and the
-- incoming slot is empty. So every finished job stays at least the retention
-- and at most the retention plus one slot's width.
CREATE FUNCTION awa._history(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    retention interval := awa._history_retention();
    pos record;
    sealed record;
    next_slot int;
    pruned int[] := '{}';
    blocked_slot int;
    forgotten jsonb := '{}';
    n bigint;
BEGIN
    IF NOT awa._try_ring_lock() THEN
        outcome := 'skipped_busy';
        detail := jsonb_build_object('reason', 'another maintenance step holds the ring lock');
        RETURN;
    END IF;
    pos := awa._ring_position('history');
    -- Sealed generations still holding rows: oldest first; a slot is sealed
    -- at the rotated_at of the generation after it.
    FOR sealed IN
        SELECT g.generation, g.slot, s.rotated_at AS sealed_at
          FROM awa.history_ring_rotations g
          JOIN awa.history_ring_rotations s ON s.generation = g.generation + 1
         WHERE g.generation > pos.generation - pos.slot_count
         ORDER BY g.generation
    LOOP
        EXIT WHEN sealed.sealed_at > clock_timestamp() - retention;
        CONTINUE WHEN awa._slot_has_no_blocks('history', sealed.slot);
        IF NOT awa._lock_slot('history', sealed.slot) THEN
            blocked_slot := sealed.slot;
            EXIT;
        END IF;
        pruned := pruned || sealed.slot;
    END LOOP;
    IF cardinality(pruned) > 0 THEN
        -- The expired slots' jobs leave the books, then the slots go, whole.
        forgotten := awa._forget_finished((SELECT string_agg(format('SELECT h.queue, h.state, h.job_id FROM awa.%I h',
                                                                    'job_history_' || p), ' UNION ALL ')
                                             FROM unnest(pruned) p));
        EXECUTE format('TRUNCATE %s', (SELECT string_agg(format('awa.%I', 'job_history_' || p), ', ')
                                         FROM unnest(pruned) p));
    ELSIF blocked_slot IS NOT NULL THEN
        outcome := 'blocked';
        detail := jsonb_build_object('slot', blocked_slot,
                                     'reason', 'a session held the slot past awa.prune_lock_timeout');
        RETURN;
    END IF;
    next_slot := awa._slot_of(pos.generation + 1, pos.slot_count);
    IF clock_timestamp() - (SELECT r.rotated_at FROM awa.history_ring_rotations r WHERE r.generation = pos.generation)
           >= retention / (pos.slot_count - 2)
       AND EXISTS (SELECT 1 FROM awa.job_history h WHERE h.history_slot = pos.slot)
       AND awa._slot_is_empty('history', next_slot) THEN
        INSERT INTO awa.history_ring_rotations (generation, slot, rotated_at)
        VALUES (pos.generation + 1, next_slot, clock_timestamp())
        ON CONFLICT (generation) DO NOTHING;
        GET DIAGNOSTICS n = ROW_COUNT;
        IF n = 1 THEN
            outcome := 'rotated';
            detail := jsonb_build_object('generation', pos.generation + 1, 'slot', next_slot,
                                         'pruned_slots', to_jsonb(pruned), 'forgotten_jobs', forgotten);
            RETURN;
        END IF;
    END IF;
    IF cardinality(pruned) > 0 THEN
        outcome := 'pruned';
        detail := jsonb_build_object('pruned_slots', to_jsonb(pruned), 'forgotten_jobs', forgotten);
    ELSE
        outcome := 'nothing_due';
        detail := jsonb_build_object('generation', pos.generation, 'slot', pos.slot);
    END IF;
END
$$;

-- Rescue: closes open attempts whose deadline passed or whose last heartbeat
-- (else claim) is older than awa.heartbeat_staleness, at most
-- awa.rescue_batch_size per call, oldest claim slots first.
CREATE FUNCTION awa._rescue(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    budget int := current_setting('awa.rescue_batch_size')::int;
    now_at timestamptz := clock_timestamp();
    stale_before timestamptz := clock_timestamp() - current_setting('awa.heartbeat_staleness')::interval;
    results jsonb := '{}';
    slot int;
    r record;
    result text;
    g bigint;
BEGIN
    pos := awa._ring_position('claim');
    FOR g IN awa._oldest_live_generation(pos.generation, pos.slot_count) .. pos.generation LOOP
        EXIT WHEN budget <= 0;
        slot := awa._slot_of(g, pos.slot_count);
        FOR r IN EXECUTE format(
            'SELECT b.batch_id, i - 1 AS idx, b.job_ids[i] AS job_id, b.run_leases[i] AS run_lease,
                    awa._slot_of(b.claim_generation, $4) AS receipt_slot
               FROM awa.%1$I b CROSS JOIN LATERAL generate_subscripts(b.job_ids, 1) AS i
              WHERE (b.deadline_at < $1 OR b.claimed_at < $2)
                AND NOT EXISTS (SELECT 1 FROM awa.%2$I c
                                 WHERE c.claim_batch_id = b.batch_id AND (i - 1) = ANY (c.claim_indexes))
                AND (b.deadline_at < $1
                     OR coalesce((SELECT s.heartbeat_at FROM awa.attempt_state s
                                   WHERE s.job_id = b.job_ids[i] AND s.run_lease = b.run_leases[i]),
                                 b.claimed_at) < $2)
              ORDER BY b.batch_id, i LIMIT $3',
            'lease_claim_batches_' || slot, 'lease_claim_closure_batches_' || slot)
            USING now_at, stale_before, budget, pos.slot_count
        LOOP
            -- A batch carried forward while open keeps the generation, and so
            -- the receipt slot, it was claimed in.
            result := awa._rescue_attempt(r.job_id, r.run_lease, awa._receipt(r.batch_id, r.idx, r.receipt_slot::int),
                                          stale_before);
            results := jsonb_set(results, ARRAY[result], to_jsonb(coalesce((results ->> result)::int, 0) + 1));
            budget := budget - 1;
        END LOOP;
    END LOOP;
    outcome := CASE WHEN results = '{}' THEN 'nothing_due' ELSE 'rescued' END;
    detail := results;
END
$$;

-- Promotion: up to awa.promote_max_batches batches of awa.promote_batch_size.
CREATE FUNCTION awa._promote(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    batch int := current_setting('awa.promote_batch_size')::int;
    total bigint := 0;
    n int;
BEGIN
    FOR i IN 1 .. current_setting('awa.promote_max_batches')::int LOOP
        n := awa.promote_due(batch);
        total := total + n;
        EXIT WHEN n < batch;
    END LOOP;
    outcome := CASE WHEN total = 0 THEN 'nothing_due' ELSE 'promoted' END;
    detail := jsonb_build_object('jobs', total);
END
$$;

-- DLQ retention: dead letters older than awa.dlq_retention are deleted, at
-- most awa.cleanup_batch_size per call.
CREATE FUNCTION awa._dlq_retention(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    ids bigint[];
    n int;
BEGIN
    SELECT array_agg(job_id) INTO ids
      FROM (SELECT d.job_id FROM awa.dlq_entries d
             WHERE d.dlq_at < clock_timestamp() - current_setting('awa.dlq_retention')::interval
             ORDER BY d.dlq_at LIMIT current_setting('awa.cleanup_batch_size')::int
               FOR UPDATE SKIP LOCKED) x;
    IF ids IS NULL THEN
        outcome := 'nothing_due';
        detail := '{}';
        RETURN;
    END IF;
    n := awa.dlq_purge(ids);
    outcome := 'purged';
    detail := jsonb_build_object('jobs', n);
END
$$;

-- ---------------------------------------------------------------------------
-- Periodic jobs (docs/periodic.md; src/pg/periodic_schedule.hpp)
-- ---------------------------------------------------------------------------
-- The first tick of `schedule` in `timezone` strictly after `after`.
CREATE FUNCTION awa.periodic_next(schedule text, timezone text DEFAULT 'UTC', after timestamptz DEFAULT now())
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'awa_periodic_next'
LANGUAGE C STABLE;

-- The last tick in [from_tick, until] (a schedule skips the ticks it missed to it).
CREATE FUNCTION awa._periodic_latest(schedule text, timezone text, from_tick timestamptz, until timestamptz)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'awa_internal_periodic_latest'
LANGUAGE C STABLE STRICT;

-- Raises what awa.enqueue would raise for these arguments; writes nothing.
CREATE FUNCTION awa._check_job(kind text, args jsonb, queue text, priority int, run_at timestamptz,
                               max_attempts int, opts jsonb)
RETURNS void
AS 'MODULE_PATHNAME', 'awa_internal_check_job'
LANGUAGE C STABLE;

-- The enqueue options of a schedule's tick: its opts' metadata with
-- metadata.periodic = {name, tick}, and its tags.
CREATE FUNCTION awa._periodic_job_opts(name text, opts jsonb, tick timestamptz)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT jsonb_strip_nulls(jsonb_build_object(
           'metadata', coalesce(opts -> 'metadata', '{}'::jsonb)
                       || jsonb_build_object('periodic', jsonb_build_object(
                              'name', name,
                              'tick', to_char(tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))),
           'tags', opts -> 'tags'))
$$;

-- Creates the schedule, or replaces the one of that name; returns its next
-- run. A schedule replaced by an identical one keeps its next run, so a
-- deploy that schedules at every start enqueues no tick twice and skips none.
CREATE FUNCTION awa.schedule_periodic(
    name     text,
    schedule text,
    kind     text,
    args     jsonb DEFAULT '{}',
    queue    text  DEFAULT 'default',
    priority int   DEFAULT 2,
    timezone text  DEFAULT 'UTC',
    opts     jsonb DEFAULT '{}')
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    p_name text := name;
    p_schedule text := schedule;
    p_timezone text := timezone;
    next_at timestamptz;
    existing awa.periodic_schedules;
    bad_key text;
BEGIN
    IF p_name IS NULL OR p_schedule IS NULL OR kind IS NULL THEN
        RAISE EXCEPTION '% must not be NULL', CASE WHEN p_name IS NULL THEN 'name' WHEN p_schedule IS NULL THEN 'schedule'
                                                   ELSE 'kind' END
            USING ERRCODE = 'null_value_not_allowed', HINT = 'Pass a name, a schedule and a job kind.';
    END IF;
    IF args IS NULL OR queue IS NULL OR priority IS NULL OR p_timezone IS NULL OR opts IS NULL THEN
        RAISE EXCEPTION '% must not be NULL', CASE WHEN args IS NULL THEN 'args' WHEN queue IS NULL THEN 'queue'
                                                   WHEN priority IS NULL THEN 'priority'
                                                   WHEN p_timezone IS NULL THEN 'timezone' ELSE 'opts' END
            USING ERRCODE = 'null_value_not_allowed', HINT = 'Leave the argument out to get its default.';
    END IF;
    IF length(p_name) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'name must be 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name the schedule, e.g. ''nightly-report''.';
    END IF;
    IF jsonb_typeof(opts) <> 'object' THEN
        RAISE EXCEPTION 'opts must be a JSON object' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass ''{}'', or keys among backfill, max_attempts, metadata and tags.';
    END IF;
    SELECT k INTO bad_key FROM jsonb_object_keys(opts) k
     WHERE k NOT IN ('backfill', 'max_attempts', 'metadata', 'tags') LIMIT 1;
    IF bad_key IS NOT NULL THEN
        RAISE EXCEPTION 'unknown option "%" in opts', bad_key USING ERRCODE = 'invalid_parameter_value',
            HINT = 'opts accepts backfill (boolean), max_attempts (integer), metadata (object) and tags (array).';
    END IF;
    IF opts ? 'backfill' AND jsonb_typeof(opts -> 'backfill') <> 'boolean' THEN
        RAISE EXCEPTION 'opts.backfill must be a boolean' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass ''{"backfill": true}'' to enqueue every missed tick.';
    END IF;
    IF opts ? 'max_attempts' AND (jsonb_typeof(opts -> 'max_attempts') <> 'number'
                                  OR (opts ->> 'max_attempts') !~ '^[0-9]{1,9}$') THEN
        RAISE EXCEPTION 'opts.max_attempts must be a positive integer' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass ''{"max_attempts": 5}''.';
    END IF;
    IF jsonb_typeof(opts -> 'metadata') = 'object' AND opts -> 'metadata' ? 'periodic' THEN
        RAISE EXCEPTION 'opts.metadata.periodic is set by awa' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Each job gets metadata.periodic = {name, tick}; use another key.';
    END IF;
    -- The schedule and the time zone (22023 with a hint), then the job as
    -- awa.enqueue would check it: a bad schedule writes nothing.
    PERFORM awa.periodic_next(p_schedule, p_timezone, now());
    PERFORM awa._check_job(kind, args, queue, priority, NULL, coalesce((opts ->> 'max_attempts')::int, 25),
                           awa._periodic_job_opts(p_name, opts, now()));

    -- Under the row's lock (the worker holds it while it enqueues a tick),
    -- the next run comes after the clock's current second (an `every`
    -- schedule starts on a whole second) and after the last tick enqueued, so
    -- a changed schedule never enqueues a tick again, however long this
    -- transaction has been open.
    SELECT * INTO existing FROM awa.periodic_schedules s WHERE s.name = p_name FOR UPDATE;
    next_at := awa.periodic_next(p_schedule, p_timezone,
                                 greatest(date_trunc('second', clock_timestamp()), existing.last_run_at));
    IF FOUND THEN
        IF existing.schedule = p_schedule AND existing.timezone = p_timezone THEN
            next_at := existing.next_run_at;
        END IF;
        UPDATE awa.periodic_schedules s
           SET schedule = p_schedule, timezone = p_timezone, kind = schedule_periodic.kind,
               args = schedule_periodic.args, queue = schedule_periodic.queue,
               priority = schedule_periodic.priority, opts = schedule_periodic.opts,
               next_run_at = next_at, updated_at = now()
         WHERE s.name = p_name;
    ELSE
        INSERT INTO awa.periodic_schedules (name, schedule, timezone, kind, args, queue, priority, opts, next_run_at)
        VALUES (p_name, p_schedule, p_timezone, kind, args, queue, priority, opts, next_at);
    END IF;
    RETURN next_at;
END
$$;

-- Removes the schedule; false when there was none. Jobs it enqueued stay.
CREATE FUNCTION awa.unschedule_periodic(name text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION 'name must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the name given to awa.schedule_periodic.';
    END IF;
    DELETE FROM awa.periodic_schedules s WHERE s.name = unschedule_periodic.name;
    RETURN FOUND;
END
$$;

-- For monitoring (awa_monitor): each schedule's timing, without its job's
-- args and options.
CREATE FUNCTION awa.periodic_status()
RETURNS TABLE (name text, schedule text, timezone text, kind text, queue text, next_run_at timestamptz,
               last_run_at timestamptz, last_job_id bigint, last_error text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT s.name, s.schedule, s.timezone, s.kind, s.queue, s.next_run_at, s.last_run_at, s.last_job_id, s.last_error
  FROM awa.periodic_schedules s ORDER BY s.name
$$;

CREATE VIEW awa.periodic_jobs AS
SELECT s.name, s.schedule, s.timezone, s.kind, s.args, s.queue, s.priority, s.opts,
       s.next_run_at, s.last_run_at, s.last_job_id, s.last_error, s.created_at, s.updated_at
  FROM awa.periodic_schedules s;

-- The periodic step: for every schedule due now (rows another session holds
-- are skipped: it is enqueueing them), enqueue the latest due tick (missed
-- ones are skipped) or, with opts.backfill, every due tick (up to 100 per
-- schedule and step; the next step goes on), and move next_run_at past it,
-- in this transaction. Each schedule runs in a subtransaction: one that
-- fails (its queue's lock held too long, a time zone gone from the system)
-- keeps its next_run_at, records the error in last_error (cleared by its
-- next tick) and in a WARNING and the detail, and the others go on. The
-- commit is at least synchronous_commit = on, so a tick reported enqueued
-- survives a crash.
CREATE FUNCTION awa._periodic(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    now_at timestamptz := clock_timestamp();
    s awa.periodic_schedules;
    tick timestamptz;
    job bigint;
    n int;
    enqueued int := 0;
    schedules int := 0;
    failed jsonb := '{}';
    batch int := 100;
    message text;
    state text;
BEGIN
    FOR s IN SELECT * FROM awa.periodic_schedules p WHERE p.next_run_at <= now_at
              ORDER BY p.next_run_at FOR UPDATE SKIP LOCKED LOOP
        schedules := schedules + 1;
        BEGIN
            tick := s.next_run_at;
            IF NOT coalesce((s.opts ->> 'backfill')::boolean, false) THEN
                tick := awa._periodic_latest(s.schedule, s.timezone, tick, now_at);
            END IF;
            n := 0;
            LOOP
                job := awa.enqueue(s.kind, s.args, s.queue, s.priority, NULL,
                                   coalesce((s.opts ->> 'max_attempts')::int, 25),
                                   awa._periodic_job_opts(s.name, s.opts, tick));
                n := n + 1;
                UPDATE awa.periodic_schedules p
                   SET last_run_at = tick, last_job_id = job, last_error = NULL,
                       next_run_at = awa.periodic_next(s.schedule, s.timezone, tick)
                 WHERE p.name = s.name
                RETURNING p.next_run_at INTO tick;
                EXIT WHEN tick > now_at OR n >= batch;
            END LOOP;
            enqueued := enqueued + n;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
            failed := failed || jsonb_build_object(s.name, state || ': ' || message);
            UPDATE awa.periodic_schedules p SET last_error = state || ': ' || message WHERE p.name = s.name;
            RAISE WARNING 'awa: periodic job "%" was not enqueued: %', s.name, message
                USING HINT = 'The periodic step tries again at its next run; see awa.periodic_jobs.';
        END;
    END LOOP;
    -- As a synchronous commit would be: at least on (a session at
    -- remote_apply keeps it).
    IF enqueued > 0 AND current_setting('synchronous_commit') IN ('off', 'local', 'remote_write') THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    outcome := CASE WHEN enqueued > 0 THEN 'enqueued' WHEN failed <> '{}' THEN 'failed' ELSE 'nothing_due' END;
    detail := jsonb_build_object('schedules', schedules, 'jobs', enqueued);
    IF failed <> '{}' THEN
        detail := detail || jsonb_build_object('failed', failed);
    END IF;
END
$$;

-- Runs one maintenance step (or every step: 'all'; every ring's: 'rotate',
-- 'prune') now, in the caller's transaction, and reports each outcome.
-- (PL/pgSQL cannot name an argument and a result column alike, so the body is
-- awa._run_maintenance.)
CREATE FUNCTION awa._run_maintenance(requested text)
RETURNS TABLE (step text, outcome text, detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    tasks text[];
    t text;
    step_outcome text;
    step_detail jsonb;
BEGIN
    IF requested IS NULL THEN
        RAISE EXCEPTION 'task must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass a task name, or ''all''.';
    END IF;
    tasks := CASE requested
               WHEN 'all' THEN awa._task_names()
               WHEN 'rotate' THEN ARRAY['rotate_queue', 'rotate_claim', 'rotate_lease']
               WHEN 'prune' THEN ARRAY['prune_queue', 'prune_claim', 'prune_lease']
               ELSE ARRAY[requested]
             END;
    IF NOT tasks <@ awa._task_names() THEN
        RAISE EXCEPTION 'unknown maintenance task "%"', requested USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Tasks are all, rotate, prune, ' || array_to_string(awa._task_names(), ', ') || '.';
    END IF;
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION 'awa maintenance cannot run during recovery' USING ERRCODE = 'read_only_sql_transaction',
            HINT = 'Run it on the primary; a standby starts maintenance once promoted.';
    END IF;
    FOREACH t IN ARRAY tasks LOOP
        IF t = 'counters' THEN
            step_outcome := awa._ensure_counters();
            step_detail := '{}';
        ELSIF t = 'promote' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._promote() x;
        ELSIF t = 'rescue' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._rescue() x;
        ELSIF t = 'dlq_retention' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._dlq_retention() x;
        ELSIF t = 'history' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._history() x;
        ELSIF t = 'periodic' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._periodic() x;
        ELSIF t LIKE 'prune_%' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._prune(substr(t, 7)) x;
        ELSE
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._rotate(substr(t, 8)) x;
        END IF;
        PERFORM awa._note_outcome(t, step_outcome);
        step := t;
        outcome := step_outcome;
        detail := step_detail;
        RETURN NEXT;
    END LOOP;
END
$$;

CREATE FUNCTION awa.run_maintenance(task text DEFAULT 'all')
RETURNS TABLE (task text, outcome text, detail jsonb)
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$ SELECT r.step, r.outcome, r.detail FROM awa._run_maintenance(task) r $$;

-- Each ring: where it is, its oldest live slot, the last rotate and prune
-- outcomes, and the dead tuples of each of its table families (children
-- summed; from the statistics collector, so up to a few hundred ms old).
CREATE FUNCTION awa.storage_status()
RETURNS TABLE (ring text, slot_count int, current_slot int, generation bigint, oldest_live_slot int,
               oldest_live_generation bigint, last_rotated_at timestamptz, last_rotate text,
               last_rotate_at timestamptz, last_prune text, last_prune_at timestamptz, prune_backoff_level int,
               dead_tuples jsonb)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    families text[];
BEGIN
    FOREACH ring IN ARRAY ARRAY['queue', 'claim', 'lease'] LOOP
        pos := awa._ring_position(ring);
        slot_count := pos.slot_count;
        current_slot := pos.slot;
        generation := pos.generation;
        oldest_live_generation := CASE WHEN ring = 'queue' THEN (awa._queue_live_generations())[1]
                                       ELSE awa._oldest_live_generation(pos.generation, pos.slot_count) END;
        oldest_live_slot := awa._slot_of(oldest_live_generation, pos.slot_count);
        EXECUTE format('SELECT max(rotated_at) FROM awa.%I', ring || '_ring_rotations') INTO last_rotated_at;
        SELECT m.last_outcome, m.last_run_at INTO last_rotate, last_rotate_at
          FROM awa.maintenance_status() m WHERE m.task = 'rotate_' || ring;
        SELECT m.last_outcome, m.last_run_at, m.prune_backoff_level INTO last_prune, last_prune_at, prune_backoff_level
          FROM awa.maintenance_status() m WHERE m.task = 'prune_' || ring;
        families := (SELECT array_agg(regexp_replace(c, '^awa\.(.*)_0$', '\1'))
                       FROM unnest(awa._slot_children(ring, 0)) c)
                    || ARRAY[ring || '_ring_rotations', ring || '_ring_slots', ring || '_ring_state'];
        SELECT jsonb_object_agg(f, coalesce((SELECT sum(s.n_dead_tup)
                                               FROM pg_stat_all_tables s
                                              WHERE s.schemaname = 'awa'
                                                AND (s.relname = f OR s.relname ~ ('^' || f || '_[0-9]+$'))), 0))
          INTO dead_tuples
          FROM unnest(families) f;
        RETURN NEXT;
    END LOOP;
END
$$;

-- ---------------------------------------------------------------------------
-- Metrics surface (docs/monitoring.md): readable by awa_monitor, which may
-- do nothing else. Every function here answers in time that grows with the
-- number of queues, lanes and waiting claims, never with the backlog (the
-- oldest available job is found from each lane's claim cursor).
-- ---------------------------------------------------------------------------
-- Per queue, the jobs each event moved since the server started (shared
-- memory; a restart or a new CREATE EXTENSION starts them at 0, as
-- Prometheus counters expect). A rescued attempt counts as rescued, not as
-- retried; claimed counts the jobs handed out, a job claimed again counting again.
CREATE FUNCTION awa.job_event_totals()
RETURNS TABLE (queue text, enqueued bigint, claimed bigint, completed bigint, retried bigint, snoozed bigint,
               failed bigint, rescued bigint)
AS 'MODULE_PATHNAME', 'awa_job_event_totals'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

-- The claims of this database that are waiting for work now.
CREATE FUNCTION awa.waiting_claims()
RETURNS TABLE (pid int, queue text, waiting_since timestamptz)
AS 'MODULE_PATHNAME', 'awa_waiting_claims'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

-- The run_at of the queue's oldest available job. Per lane: the lanes that
-- claims handed out above the claim cursor (their evidence's lane_ranges,
-- merged), the first lane above the cursor outside them, and from there the
-- first ready row that no claim covers and no tombstone hides. Its cost
-- follows the claims since the cursor last moved, not the rows they took (a
-- row claimed by a transaction still open counts as available).
CREATE FUNCTION awa._oldest_available_at(p_queue text)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    l record;
    cursor_at bigint;
    claimed int8multirange;
    r int8range;
    free bigint;
    lane_oldest timestamptz;
    oldest timestamptz;
BEGIN
    FOR l IN SELECT q.priority, q.claim_seq FROM awa.queue_lanes q WHERE q.queue = p_queue LOOP
        cursor_at := awa.cursor_value(l.claim_seq);
        SELECT coalesce(range_agg(x.lanes), '{}'::int8multirange) INTO claimed
          FROM awa.ready_claim_attempt_batches b, unnest(b.lane_ranges) AS x(lanes)
         WHERE b.queue = p_queue AND b.priority = l.priority AND b.next_lane_seq > cursor_at;
        free := cursor_at + 1;
        FOR r IN SELECT unnest(claimed) LOOP
            EXIT WHEN lower(r) > free;
            free := greatest(free, upper(r));
        END LOOP;
        SELECT e.run_at INTO lane_oldest
          FROM awa.ready_entries e
         WHERE e.queue = p_queue AND e.priority = l.priority AND e.lane_seq >= free
           AND NOT claimed @> e.lane_seq
           AND NOT EXISTS (SELECT 1 FROM awa.ready_tombstones t
                            WHERE t.queue = e.queue AND t.priority = e.priority AND t.lane_seq = e.lane_seq)
         ORDER BY e.lane_seq
         LIMIT 1;
        IF lane_oldest IS NOT NULL AND (oldest IS NULL OR lane_oldest < oldest) THEN
            oldest := lane_oldest;
        END IF;
    END LOOP;
    RETURN oldest;
END
$$;

-- One row per queue: its jobs per state (the O(1) counters of
-- awa.queue_counts), its oldest available job, the claims waiting on it, and
-- whether it is paused.
CREATE FUNCTION awa.queue_metrics()
RETURNS TABLE (queue text, available bigint, scheduled bigint, retryable bigint, running bigint,
               completed bigint, failed bigint, cancelled bigint, dlq bigint,
               oldest_available_at timestamptz, oldest_available_age_seconds double precision,
               waiting_claims bigint, paused boolean)
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT c.queue, c.available, c.scheduled, c.retryable, c.running, c.completed, c.failed, c.cancelled, c.dlq,
       o.at,
       CASE WHEN o.at IS NULL THEN 0
            ELSE greatest(extract(epoch FROM clock_timestamp() - o.at), 0)::double precision END,
       coalesce(w.n, 0),
       coalesce((SELECT m.paused FROM awa.queue_meta m WHERE m.queue = c.queue), false)
  FROM awa.queue_counts() c
 CROSS JOIN LATERAL (SELECT CASE WHEN c.available > 0 THEN awa._oldest_available_at(c.queue) END AS at) o
  LEFT JOIN (SELECT x.queue, count(*) AS n FROM awa.waiting_claims() x GROUP BY x.queue) w ON w.queue = c.queue
 ORDER BY c.queue
$$;

-- A new database with awa is served by the maintenance worker at once.
SELECT awa._wake_launcher();

-- ---------------------------------------------------------------------------
-- Privileges: awa_producer enqueues; awa_worker claims and ends attempts;
-- awa_admin may do everything. Nothing is executable by PUBLIC.
-- ---------------------------------------------------------------------------
DO $grants$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.pronamespace = 'awa'::regnamespace LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
END
$grants$;

GRANT EXECUTE ON FUNCTION awa.enqueue(text, jsonb, text, int, timestamptz, int, jsonb),
                          awa.enqueue_many(text[], jsonb[], text, int[], timestamptz[], int, jsonb[])
    TO awa_producer, awa_admin;
GRANT EXECUTE ON FUNCTION awa.claim(text, int, interval, interval, boolean),
                          awa.complete(bigint, bigint, bigint),
                          awa.complete_many(bigint[], bigint[], bigint[]),
                          awa.heartbeat(bigint, bigint, bigint, jsonb),
                          awa.heartbeat_many(bigint[], bigint[], bigint[], jsonb[]),
                          awa.retry(bigint, bigint, bigint, text, interval),
                          awa.snooze(bigint, bigint, bigint, interval),
                          awa.fail(bigint, bigint, bigint, text)
    TO awa_worker, awa_admin;
GRANT EXECUTE ON FUNCTION awa.await_durable() TO awa_producer, awa_worker, awa_admin;
GRANT EXECUTE ON FUNCTION awa.cancel(bigint),
                          awa.get_job(bigint),
                          awa.promote_due(int),
                          awa.queue_counts(text),
                          awa.queue_counts_exact(text),
                          awa.rebuild_counters(),
                          awa.configure_queue(text, boolean, interval, interval),
                          awa.pause_queue(text),
                          awa.resume_queue(text),
                          awa.dlq_retry(bigint[]),
                          awa.dlq_purge(bigint[]),
                          awa.cursor_value(regclass),
                          awa.run_maintenance(text),
                          awa.storage_status(),
                          awa.maintenance_status()
    TO awa_admin;
GRANT EXECUTE ON FUNCTION awa.schedule_periodic(text, text, text, jsonb, text, int, text, jsonb),
                          awa.unschedule_periodic(text),
                          awa.periodic_next(text, text, timestamptz)
    TO awa_admin;
GRANT SELECT ON awa.lanes, awa.dlq, awa.periodic_jobs TO awa_admin;
GRANT EXECUTE ON FUNCTION awa.queue_metrics(),
                          awa.job_event_totals(),
                          awa.waiting_claims(),
                          awa.periodic_status(),
                          awa.storage_status(),
                          awa.maintenance_status()
    TO awa_monitor, awa_admin;
