-- ---------------------------------------------------------------------------
-- Ring partitions. Slot counts come from awa.queue_slot_count,
-- awa.claim_slot_count, awa.lease_slot_count and awa.history_slot_count when
-- set at CREATE EXTENSION time, else 16 / 8 / 8 / 8, and are fixed afterwards;
-- the queue and claim rings get awa.ring_spare_slots (16) more partitions,
-- made up front because a partition cannot be attached while a session holds
-- its parent without waiting for it (docs/architecture.md).
-- Which families belong to a ring is said once, in src/core/ring.hpp
-- (FamiliesOf), served by awa._slot_children: the partitions are made from
-- it, and rotation, prune and storage_status read it.
-- ---------------------------------------------------------------------------
-- The children of one ring slot, in lock order: 'awa.<family>_<slot>'.
CREATE FUNCTION awa._slot_children(ring text, slot int)
RETURNS text[]
AS 'MODULE_PATHNAME', 'awa_internal_slot_children'
LANGUAGE C IMMUTABLE STRICT;

DO $ring$
DECLARE
    slot_counts jsonb := jsonb_build_object(
        'queue', coalesce(nullif(current_setting('awa.queue_slot_count', true), '')::int, 16),
        'claim', coalesce(nullif(current_setting('awa.claim_slot_count', true), '')::int, 8),
        'lease', coalesce(nullif(current_setting('awa.lease_slot_count', true), '')::int, 8),
        'history', coalesce(nullif(current_setting('awa.history_slot_count', true), '')::int, 8));
    spare int := coalesce(nullif(current_setting('awa.ring_spare_slots', true), '')::int, 16);
    ring text;
    w int;
    n int;
    child text;
BEGIN
    -- Each ring: its state, its first ledger entry, and per slot its slot row and
    -- one partition of each of its families (awa._slot_children, the one list).
    FOREACH ring IN ARRAY ARRAY['queue', 'claim', 'lease', 'history'] LOOP
        w := (slot_counts ->> ring)::int;
        -- The queue and claim rings get spare partitions (at most 64 and 16
        -- in all: a receipt has 4 bits for its claim slot).
        n := CASE ring WHEN 'queue' THEN least(64, w + spare)
                       WHEN 'claim' THEN least(16, w + spare)
                       ELSE w END;
        EXECUTE format('INSERT INTO awa.%I (slot_count, width) VALUES ($1, $2)', ring || '_ring_state') USING n, w;
        EXECUTE format('INSERT INTO awa.%I (generation, slot) VALUES (0, 0)', ring || '_ring_rotations');
        FOR s IN 0 .. n - 1 LOOP
            EXECUTE format('INSERT INTO awa.%I VALUES ($1)', ring || '_ring_slots') USING s;
            FOREACH child IN ARRAY awa._slot_children(ring, s) LOOP
                EXECUTE format('CREATE TABLE %s PARTITION OF %s FOR VALUES IN (%s)',
                               child, regexp_replace(child, '_[0-9]+$', ''), s);
                -- A ready row's lane position is unique in its slot: the
                -- partition's own unique index, not a primary key of the
                -- parent, which would have to hold ready_slot (04_queue_ring.sql).
                IF child = format('awa.%I', 'ready_entries_' || s) THEN
                    EXECUTE format('CREATE UNIQUE INDEX %I ON %s (lane_id, lane_seq)',
                                   'ready_entries_' || s || '_lane_seq_key', child);
                END IF;
                -- Claim and closure evidence: a batch id is unique in its
                -- slot, by the partition's own unique index (05_claim_ring.sql):
                -- a completion finds its claim, and a claim batch's closures
                -- are a range, in it. Not the ready side's claim evidence:
                -- every reader of it goes by lane (its (lane_id,
                -- next_lane_seq) index), none by batch id, and its batch id is
                -- its claim batch's, unique in lease_claim_batches.
                IF regexp_replace(child, '_[0-9]+$', '') IN ('awa.lease_claim_batches',
                                                             'awa.lease_claim_closure_batches') THEN
                    EXECUTE format('CREATE UNIQUE INDEX %I ON %s (batch_id)',
                                   regexp_replace(child, '^awa\.', '') || '_batch_id_key', child);
                END IF;
                -- The completion receipts: no hot path reads them by batch id
                -- (a completion's fence is its closure batch, unique in
                -- lease_claim_closure_batches); only awa.get_job looks one up
                -- by its closure batch id. A BRIN index serves that look-up
                -- (batch ids grow with time, so a page range's minimum and
                -- maximum are close) and costs a completion no WAL: an insert
                -- into a page range not yet summarized writes nothing, and
                -- completions are appended to the last range. The queue
                -- prune summarizes each range once it is full, every pass
                -- (awa._summarize_receipts; VACUUM, which summarizes too,
                -- seldom reaches a slot before its prune truncates it). The
                -- build summarizes the first range as empty, which every
                -- completion would widen (72 bytes of WAL each): it is left
                -- unsummarized here and after each TRUNCATE (47_prune.sql).
                -- Ranges of 8 pages: a look-up reads about 600 receipts. The
                -- B-tree it replaces cost every completion 67 bytes of WAL
                -- (docs/architecture.md §4, "Evidence rows store no copy of a
                -- key; completion receipts without a B-tree").
                IF child = format('awa.%I', 'receipt_completion_batches_' || s) THEN
                    EXECUTE format('CREATE INDEX %I ON %s USING brin (batch_id) WITH (pages_per_range = 8)',
                                   'receipt_completion_batches_' || s || '_batch_id_idx', child);
                    PERFORM pg_catalog.brin_desummarize_range(
                        format('awa.%I', 'receipt_completion_batches_' || s || '_batch_id_idx')::regclass, 0);
                END IF;
            END LOOP;
        END LOOP;
    END LOOP;
    -- The ready rows' trailing columns (04_queue_ring.sql), added to the
    -- parent once every slot's table exists: ADD COLUMN gives each slot's
    -- table run_lease's default as its missing value, which a row that ends
    -- before the column reads. An enqueue leaves out the trailing columns
    -- that read back the same (direct_insert.cpp), so a fresh job's row is
    -- 16 bytes shorter: no run_lease, no null bitmap.
    ALTER TABLE awa.ready_entries
        ADD COLUMN run_lease        bigint      NOT NULL DEFAULT 0,
        ADD COLUMN attempted_at     timestamptz,
        ADD COLUMN unique_key       bytea,
        ADD COLUMN unique_states    smallint,
        ADD COLUMN payload          jsonb,
        -- The generation the row was enqueued into, when a prune carried it
        -- forward; NULL while it is ready_generation (every row an enqueue
        -- writes: 8 bytes per job fewer). Lanes take origins in lane order,
        -- so the claim walk learns where a lane's head can be from the
        -- origins of lanes at or below its cursor. Read it as
        -- coalesce(origin_generation, ready_generation).
        ADD COLUMN origin_generation bigint;
    -- The evidence rows' counts and per-job arrays, likewise: their missing
    -- values are what a batch-1 claim of a job on its first run, and its
    -- completion, write, so those rows store none of them (docs/architecture.md,
    -- "A ready row ends at its last value"). The defaults say nothing else:
    -- awa writes every column.
    ALTER TABLE awa.ready_claim_attempt_batches
        ADD COLUMN claimed_count integer NOT NULL DEFAULT 1,
        ADD COLUMN lane_ranges   int8multirange;
    ALTER TABLE awa.receipt_completion_batches
        ADD COLUMN completed_count integer  NOT NULL DEFAULT 1,
        ADD COLUMN run_leases      bigint[] NOT NULL DEFAULT '{1}',
        ADD COLUMN lane_seqs       bigint[];
    ALTER TABLE awa.lease_claim_batches
        ADD COLUMN claimed_count integer    NOT NULL DEFAULT 1,
        ADD COLUMN run_leases    bigint[]   NOT NULL DEFAULT '{1}',
        ADD COLUMN attempts      smallint[] NOT NULL DEFAULT '{1}',
        ADD COLUMN max_attempts  smallint[] NOT NULL DEFAULT '{25}',
        -- job_ids before lane_seqs: a claim whose ids are not consecutive
        -- (another producer's between them) mostly has consecutive lane
        -- positions, and its row then ends after job_ids, with no null bitmap.
        ADD COLUMN job_ids       bigint[],
        ADD COLUMN lane_seqs     bigint[];
    ALTER TABLE awa.lease_claim_closure_batches
        ADD COLUMN outcome       text      NOT NULL DEFAULT 'completed',
        ADD COLUMN closed_count  integer   NOT NULL DEFAULT 1,
        ADD COLUMN claim_indexes integer[] NOT NULL DEFAULT '{0}';
    -- No autovacuum on any ring partition or its TOAST table (made by the
    -- ADD COLUMNs above for some): a slot is reclaimed whole by TRUNCATE at
    -- its prune, and its rows are only inserted (a cancel's rare delete
    -- aside), so a vacuum would only set visibility bits and freeze rows that
    -- a later wrap truncates, and an analyze describe contents the next wrap
    -- replaces; both wrote WAL and took CPU per job under load
    -- (docs/architecture.md, "Ring partitions are not autovacuumed"). A
    -- VACUUM to prevent xid wraparound still runs when one is due.
    FOREACH ring IN ARRAY ARRAY['queue', 'claim', 'lease', 'history'] LOOP
        EXECUTE format('SELECT slot_count FROM awa.%I', ring || '_ring_state') INTO n;
        FOR s IN 0 .. n - 1 LOOP
            FOREACH child IN ARRAY awa._slot_children(ring, s) LOOP
                EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)',
                               child);
            END LOOP;
        END LOOP;
    END LOOP;
END
$ring$;

