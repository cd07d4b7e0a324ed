-- bench/lanekey_row_shapes.sql: WAL bytes per row of the ring rows an enqueue and a batch-1 drain
-- write that carry a lane's identity, in three shapes (bench/RESULTS-lanekey.md):
--   today: keyed by (queue, priority), both columns in the row;
--   kept:  keyed by lane_id, queue and priority kept as plain columns (priority in the slot's
--          padding) - what awa does since the lanekey change;
--   join:  keyed by lane_id, no queue or priority column (readers would join awa.queue_lanes).
-- Plain tables with the ring tables' columns and indexes (no partitions: a child's rows are the
-- same), N rows each inserted one per statement, as awa writes them; the queue name is :'q'.
--   psql -X -v q=default -v n=10000 -f bench/lanekey_row_shapes.sql
-- Needs no extension. Prints bytes per row per table (pg_current_wal_insert_lsn difference; each
-- figure includes the row's heap record and its index entries, not the commit record).
\set ON_ERROR_STOP on
SET synchronous_commit = off;
DROP SCHEMA IF EXISTS shapes CASCADE;
CREATE SCHEMA shapes;
SET search_path = shapes;

-- ready_entries
CREATE TABLE re_today (ready_slot smallint NOT NULL, ready_generation bigint NOT NULL, queue text NOT NULL,
    priority smallint NOT NULL, lane_seq bigint NOT NULL, job_id bigint NOT NULL, run_lease bigint NOT NULL,
    attempt smallint NOT NULL, max_attempts smallint NOT NULL, kind text NOT NULL, args jsonb NOT NULL,
    run_at timestamptz NOT NULL, created_at timestamptz NOT NULL, attempted_at timestamptz, unique_key bytea,
    unique_states smallint, payload jsonb, PRIMARY KEY (queue, priority, lane_seq, ready_slot));
CREATE TABLE re_kept (ready_slot smallint NOT NULL, priority smallint NOT NULL, ready_generation bigint NOT NULL,
    lane_id bigint NOT NULL, queue text NOT NULL, lane_seq bigint NOT NULL, job_id bigint NOT NULL,
    run_lease bigint NOT NULL, attempt smallint NOT NULL, max_attempts smallint NOT NULL, kind text NOT NULL,
    args jsonb NOT NULL, run_at timestamptz NOT NULL, created_at timestamptz NOT NULL, attempted_at timestamptz,
    unique_key bytea, unique_states smallint, payload jsonb, PRIMARY KEY (lane_id, lane_seq, ready_slot));
CREATE TABLE re_join (ready_slot smallint NOT NULL, ready_generation bigint NOT NULL, lane_id bigint NOT NULL,
    lane_seq bigint NOT NULL, job_id bigint NOT NULL, run_lease bigint NOT NULL, attempt smallint NOT NULL,
    max_attempts smallint NOT NULL, kind text NOT NULL, args jsonb NOT NULL, run_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL, attempted_at timestamptz, unique_key bytea, unique_states smallint,
    payload jsonb, PRIMARY KEY (lane_id, lane_seq, ready_slot));
CREATE INDEX ON re_today (job_id);
CREATE INDEX ON re_kept (job_id);
CREATE INDEX ON re_join (job_id);
-- ready_segments
CREATE TABLE rs_today (ready_slot smallint NOT NULL, ready_generation bigint NOT NULL, queue text NOT NULL,
    priority smallint NOT NULL, first_lane_seq bigint NOT NULL, next_lane_seq bigint NOT NULL,
    first_run_at timestamptz NOT NULL, created_at timestamptz NOT NULL, origin_generation bigint NOT NULL,
    PRIMARY KEY (queue, priority, next_lane_seq, ready_slot));
CREATE TABLE rs_kept (ready_slot smallint NOT NULL, priority smallint NOT NULL, ready_generation bigint NOT NULL,
    lane_id bigint NOT NULL, queue text NOT NULL, first_lane_seq bigint NOT NULL, next_lane_seq bigint NOT NULL,
    first_run_at timestamptz NOT NULL, created_at timestamptz NOT NULL, origin_generation bigint NOT NULL,
    PRIMARY KEY (lane_id, next_lane_seq, ready_slot));
CREATE TABLE rs_join (ready_slot smallint NOT NULL, ready_generation bigint NOT NULL, lane_id bigint NOT NULL,
    first_lane_seq bigint NOT NULL, next_lane_seq bigint NOT NULL, first_run_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL, origin_generation bigint NOT NULL, PRIMARY KEY (lane_id, next_lane_seq, ready_slot));
-- ready_claim_attempt_batches
CREATE TABLE ab_today (ready_slot smallint NOT NULL, ready_generation bigint NOT NULL, batch_id bigint NOT NULL,
    queue text NOT NULL, priority smallint NOT NULL, claim_slot smallint NOT NULL, claim_generation bigint NOT NULL,
    first_lane_seq bigint NOT NULL, next_lane_seq bigint NOT NULL, claimed_count integer NOT NULL,
    lane_ranges int8multirange NOT NULL, claimed_at timestamptz NOT NULL, PRIMARY KEY (batch_id, ready_slot));
CREATE INDEX ON ab_today (queue, priority, next_lane_seq);
CREATE TABLE ab_kept (ready_slot smallint NOT NULL, priority smallint NOT NULL, claim_slot smallint NOT NULL,
    ready_generation bigint NOT NULL, batch_id bigint NOT NULL, lane_id bigint NOT NULL, queue text NOT NULL,
    claim_generation bigint NOT NULL, first_lane_seq bigint NOT NULL, next_lane_seq bigint NOT NULL,
    claimed_count integer NOT NULL, lane_ranges int8multirange NOT NULL, claimed_at timestamptz NOT NULL,
    PRIMARY KEY (batch_id, ready_slot));
CREATE INDEX ON ab_kept (lane_id, next_lane_seq);
CREATE TABLE ab_join (ready_slot smallint NOT NULL, claim_slot smallint NOT NULL, ready_generation bigint NOT NULL,
    batch_id bigint NOT NULL, lane_id bigint NOT NULL, claim_generation bigint NOT NULL,
    first_lane_seq bigint NOT NULL, next_lane_seq bigint NOT NULL, claimed_count integer NOT NULL,
    lane_ranges int8multirange NOT NULL, claimed_at timestamptz NOT NULL, PRIMARY KEY (batch_id, ready_slot));
CREATE INDEX ON ab_join (lane_id, next_lane_seq);
-- lease_claim_batches
CREATE TABLE cb_today (claim_slot smallint NOT NULL, claim_generation bigint NOT NULL, batch_id bigint NOT NULL,
    ready_slot smallint NOT NULL, ready_generation bigint NOT NULL, queue text NOT NULL, priority smallint NOT NULL,
    claimed_count integer NOT NULL, job_ids bigint[] NOT NULL, run_leases bigint[] NOT NULL,
    lane_seqs bigint[] NOT NULL, attempts smallint[] NOT NULL, max_attempts smallint[] NOT NULL,
    deadline_at timestamptz NOT NULL, claimed_at timestamptz NOT NULL, PRIMARY KEY (batch_id, claim_slot));
CREATE TABLE cb_kept (claim_slot smallint NOT NULL, ready_slot smallint NOT NULL, priority smallint NOT NULL,
    claim_generation bigint NOT NULL, batch_id bigint NOT NULL, ready_generation bigint NOT NULL,
    lane_id bigint NOT NULL, queue text NOT NULL, claimed_count integer NOT NULL, job_ids bigint[] NOT NULL,
    run_leases bigint[] NOT NULL, lane_seqs bigint[] NOT NULL, attempts smallint[] NOT NULL,
    max_attempts smallint[] NOT NULL, deadline_at timestamptz NOT NULL, claimed_at timestamptz NOT NULL,
    PRIMARY KEY (batch_id, claim_slot));
CREATE TABLE cb_join (claim_slot smallint NOT NULL, ready_slot smallint NOT NULL, claim_generation bigint NOT NULL,
    batch_id bigint NOT NULL, ready_generation bigint NOT NULL, lane_id bigint NOT NULL,
    claimed_count integer NOT NULL, job_ids bigint[] NOT NULL, run_leases bigint[] NOT NULL,
    lane_seqs bigint[] NOT NULL, attempts smallint[] NOT NULL, max_attempts smallint[] NOT NULL,
    deadline_at timestamptz NOT NULL, claimed_at timestamptz NOT NULL, PRIMARY KEY (batch_id, claim_slot));
-- receipt_completion_batches
CREATE TABLE rc_today (ready_slot smallint NOT NULL, ready_generation bigint NOT NULL, batch_id bigint NOT NULL,
    claim_slot smallint NOT NULL, claim_batch_id bigint NOT NULL, queue text NOT NULL, priority smallint NOT NULL,
    completed_count integer NOT NULL, job_ids bigint[] NOT NULL, run_leases bigint[] NOT NULL,
    lane_seqs bigint[] NOT NULL, completed_at timestamptz NOT NULL, PRIMARY KEY (batch_id, ready_slot));
CREATE TABLE rc_kept (ready_slot smallint NOT NULL, claim_slot smallint NOT NULL, priority smallint NOT NULL,
    ready_generation bigint NOT NULL, batch_id bigint NOT NULL, claim_batch_id bigint NOT NULL,
    lane_id bigint NOT NULL, queue text NOT NULL, completed_count integer NOT NULL, job_ids bigint[] NOT NULL,
    run_leases bigint[] NOT NULL, lane_seqs bigint[] NOT NULL, completed_at timestamptz NOT NULL,
    PRIMARY KEY (batch_id, ready_slot));
CREATE TABLE rc_join (ready_slot smallint NOT NULL, claim_slot smallint NOT NULL, ready_generation bigint NOT NULL,
    batch_id bigint NOT NULL, claim_batch_id bigint NOT NULL, lane_id bigint NOT NULL,
    completed_count integer NOT NULL, job_ids bigint[] NOT NULL, run_leases bigint[] NOT NULL,
    lane_seqs bigint[] NOT NULL, completed_at timestamptz NOT NULL, PRIMARY KEY (batch_id, ready_slot));
CREATE INDEX ON rc_today (claim_batch_id);
CREATE INDEX ON rc_kept (claim_batch_id);
CREATE INDEX ON rc_join (claim_batch_id);

-- One statement per row, as awa's direct inserts write one row (or one multi-insert) per call.
CREATE FUNCTION wal_per_row(tbl text, n int) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
    q text := current_setting('shapes.q');
    cols text;
    start pg_lsn;
BEGIN
    cols := CASE left(tbl, 2)
        WHEN 're' THEN CASE right(tbl, 5)
            WHEN 'today' THEN format('0, 1, %L, 2, $1, $1, 0, 0::smallint, 25::smallint, %L, %L::jsonb, now(), now(), NULL, NULL, NULL, NULL', q, 'job', '{"task":"send_email","user_id":12345,"template":"welcome","attempt_limit":25}')
            WHEN '_kept' THEN format('0, 2, 1, 7, %L, $1, $1, 0, 0::smallint, 25::smallint, %L, %L::jsonb, now(), now(), NULL, NULL, NULL, NULL', q, 'job', '{"task":"send_email","user_id":12345,"template":"welcome","attempt_limit":25}')
            ELSE format('0, 1, 7, $1, $1, 0, 0::smallint, 25::smallint, %L, %L::jsonb, now(), now(), NULL, NULL, NULL, NULL', 'job', '{"task":"send_email","user_id":12345,"template":"welcome","attempt_limit":25}') END
        WHEN 'rs' THEN CASE right(tbl, 5)
            WHEN 'today' THEN format('0, 1, %L, 2, $1, $1 + 1, now(), now(), 1', q)
            WHEN '_kept' THEN format('0, 2, 1, 7, %L, $1, $1 + 1, now(), now(), 1', q)
            ELSE '0, 1, 7, $1, $1 + 1, now(), now(), 1' END
        WHEN 'ab' THEN CASE right(tbl, 5)
            WHEN 'today' THEN format('0, 1, $1, %L, 2, 0, 1, $1, $1 + 1, 1, int8multirange(int8range($1, $1 + 1)), now()', q)
            WHEN '_kept' THEN format('0, 2, 0, 1, $1, 7, %L, 1, $1, $1 + 1, 1, int8multirange(int8range($1, $1 + 1)), now()', q)
            ELSE '0, 0, 1, $1, 7, 1, $1, $1 + 1, 1, int8multirange(int8range($1, $1 + 1)), now()' END
        WHEN 'cb' THEN CASE right(tbl, 5)
            WHEN 'today' THEN format('0, 1, $1, 0, 1, %L, 2, 1, ARRAY[$1], ARRAY[$1], ARRAY[$1], ARRAY[1::smallint], ARRAY[25::smallint], now(), now()', q)
            WHEN '_kept' THEN format('0, 0, 2, 1, $1, 1, 7, %L, 1, ARRAY[$1], ARRAY[$1], ARRAY[$1], ARRAY[1::smallint], ARRAY[25::smallint], now(), now()', q)
            ELSE '0, 0, 1, $1, 1, 7, 1, ARRAY[$1], ARRAY[$1], ARRAY[$1], ARRAY[1::smallint], ARRAY[25::smallint], now(), now()' END
        ELSE CASE right(tbl, 5)
            WHEN 'today' THEN format('0, 1, $1, 0, $1, %L, 2, 1, ARRAY[$1], ARRAY[$1], ARRAY[$1], now()', q)
            WHEN '_kept' THEN format('0, 0, 2, 1, $1, $1, 7, %L, 1, ARRAY[$1], ARRAY[$1], ARRAY[$1], now()', q)
            ELSE '0, 0, 1, $1, $1, 7, 1, ARRAY[$1], ARRAY[$1], ARRAY[$1], now()' END
    END;
    -- warm-up row (first page), then the measured rows
    EXECUTE format('INSERT INTO shapes.%I VALUES (%s)', tbl, cols) USING 0::bigint;
    start := pg_current_wal_insert_lsn();
    FOR i IN 1 .. n LOOP
        EXECUTE format('INSERT INTO shapes.%I VALUES (%s)', tbl, cols) USING i::bigint;
    END LOOP;
    RETURN round(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), start) / n, 1);
END
$$;
SELECT set_config('shapes.q', :'q', false);
CHECKPOINT;
SELECT t AS family,
       wal_per_row(p || '_today', :n) AS today,
       wal_per_row(p || '_kept', :n) AS kept,
       wal_per_row(p || '_join', :n) AS "join"
  FROM (VALUES ('ready_entries', 're'), ('ready_segments', 'rs'), ('ready_claim_attempt_batches', 'ab'),
               ('lease_claim_batches', 'cb'), ('receipt_completion_batches', 'rc')) v(t, p);
DROP SCHEMA shapes CASCADE;
