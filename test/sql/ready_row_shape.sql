-- ready_row_shape: a ready row ends at its last value, and so do the claim
-- and completion evidence rows (issue 19 §5).
-- Proves: a fresh job's ready row stores its first 13 columns only, with no
-- null bitmap (a 24-byte header), and reads run_lease 0 and NULL options (the
-- missing value ADD COLUMN gave each slot's table, 12_ring_partitions.sql); a
-- job with tags stores up to payload, with a bitmap; a retried job's promoted
-- row stores its run_lease and reads it back; after VACUUM FULL of the slot's
-- table, which drops the missing value, an enqueue stores run_lease again (14
-- columns) and every row still reads the same. A batch-1 claim of a job on its
-- first run, and its completion, store no count and no per-job array but the
-- job ids and lane positions (their missing values are what such a batch
-- writes) and read them back; a claim of two jobs, a retried job's claim and
-- a custom max_attempts store them. A table of another layout (an earlier
-- build's) is refused with XX001 and a hint, and nothing is written. Needs
-- pageinspect.
-- Queues used here: rs_q, rs_retry, rs_ev.
--
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pageinspect;
RESET client_min_messages;

-- A row of a ring family as stored, found by a condition on the parent (which
-- may end in ORDER BY ... LIMIT 1): its columns stored and in all, header size,
-- null bitmap.
CREATE FUNCTION pg_temp.stored(family text, slot_column text, cond text)
RETURNS TABLE (stored_columns int, of_columns int, header_bytes int, null_bitmap boolean)
LANGUAGE plpgsql AS $f$
DECLARE
    slot int;
    blk int;
    item int;
BEGIN
    EXECUTE format('SELECT %I, (ctid::text::point)[0]::int, (ctid::text::point)[1]::int FROM awa.%I WHERE %s',
                   slot_column, family, cond)
       INTO slot, blk, item;
    RETURN QUERY
    SELECT (p.t_infomask2 & 2047)::int,
           (SELECT count(*)::int FROM pg_attribute a
             WHERE a.attrelid = format('awa.%I', family)::regclass AND a.attnum > 0 AND NOT a.attisdropped),
           p.t_hoff::int, p.t_bits IS NOT NULL
      FROM heap_page_items(get_raw_page(format('awa.%s_%s', family, slot), blk)) p
     WHERE p.lp = item;
END
$f$;

-- The job's newest ready row as stored.
CREATE FUNCTION pg_temp.shape(job bigint)
RETURNS TABLE (stored_columns int, header_bytes int, null_bitmap boolean)
LANGUAGE sql AS $f$
SELECT s.stored_columns, s.header_bytes, s.null_bitmap
  FROM pg_temp.stored('ready_entries', 'ready_slot',
                      'job_id = ' || job || ' ORDER BY ready_generation DESC, lane_seq DESC LIMIT 1') s
$f$;

-- The job's newest ready row as read.
CREATE FUNCTION pg_temp.row_of(job bigint)
RETURNS TABLE (run_lease bigint, attempt smallint, attempted_at_null boolean, unique_key_null boolean,
               payload jsonb, origin_generation_null boolean)
LANGUAGE sql AS $f$
SELECT e.run_lease, e.attempt, e.attempted_at IS NULL, e.unique_key IS NULL, e.payload, e.origin_generation IS NULL
  FROM awa.ready_entries e WHERE e.job_id = job
 ORDER BY e.ready_generation DESC, e.lane_seq DESC LIMIT 1
$f$;

-- Each slot's table reads an absent run_lease as 0.
SELECT count(*) FILTER (WHERE a.atthasmissing AND a.attmissingval::text = '{0}') AS slots_reading_0,
       count(*) AS slots
  FROM pg_inherits i JOIN pg_attribute a ON a.attrelid = i.inhrelid AND a.attname = 'run_lease'
 WHERE i.inhparent = 'awa.ready_entries'::regclass;

-- A fresh job: 13 columns, no bitmap, 24-byte header.
SELECT awa.enqueue('fresh', '{"n": 1}', queue => 'rs_q') AS fresh \gset
SELECT * FROM pg_temp.shape(:fresh);
SELECT * FROM pg_temp.row_of(:fresh);

-- A job with tags: stored up to payload, with a bitmap (attempted_at and the
-- unique key are NULL).
SELECT awa.enqueue('tagged', '{"n": 2}', queue => 'rs_q', opts => '{"tags": ["a"]}') AS tagged \gset
SELECT * FROM pg_temp.shape(:tagged);
SELECT * FROM pg_temp.row_of(:tagged);

-- A retried job, promoted: its row stores run_lease 1 and the error history.
SELECT awa.enqueue('retried', queue => 'rs_retry') AS retried \gset
SELECT run_lease AS rl, receipt_id AS rr FROM awa.claim('rs_retry') \gset
SELECT awa.retry(:retried, :rl, :rr, 'first failure', interval '0') AS outcome;
SELECT awa.promote_due() >= 1 AS promoted;
SELECT * FROM pg_temp.shape(:retried);
SELECT run_lease, attempt, attempted_at_null, payload -> 'errors' IS NOT NULL AS has_errors
  FROM pg_temp.row_of(:retried);
SELECT run_lease AS claimed_run_lease, attempt FROM awa.claim('rs_retry');

-- VACUUM FULL drops the slot table's missing value: the next enqueue into it
-- stores run_lease (14 columns, still no bitmap), and every row reads as before.
SELECT ready_slot AS slot FROM awa.ready_entries WHERE job_id = :fresh \gset
SELECT format('VACUUM FULL awa.ready_entries_%s', :slot) AS vacuum_full \gset
:vacuum_full;
SELECT a.atthasmissing AS still_reads_0 FROM pg_attribute a
 WHERE a.attrelid = format('awa.ready_entries_%s', :slot)::regclass AND a.attname = 'run_lease';
SELECT awa.enqueue('after_rewrite', queue => 'rs_q') AS after \gset
SELECT ready_slot = :slot AS same_slot FROM awa.ready_entries WHERE job_id = :after;
SELECT * FROM pg_temp.shape(:after);
SELECT * FROM pg_temp.row_of(:after);
SELECT * FROM pg_temp.shape(:fresh);
SELECT * FROM pg_temp.row_of(:fresh);
SELECT * FROM pg_temp.row_of(:tagged);
SELECT kind, run_lease FROM awa.claim('rs_q', 10) ORDER BY job_id;

-- ---------------------------------------------------------------------------
-- Claim and completion evidence.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('one', queue => 'rs_ev') AS one \gset
SELECT run_lease AS l1, receipt_id AS r1 FROM awa.claim('rs_ev') \gset
SELECT awa.complete(:one, :l1, :r1) AS completed;
SELECT batch_id AS cb FROM awa.lease_claim_batches WHERE first_job_id = :one \gset
SELECT 'attempt batch' AS row_of, stored_columns, of_columns FROM pg_temp.stored('ready_claim_attempt_batches', 'ready_slot', 'batch_id = ' || :cb)
UNION ALL
SELECT 'claim batch', stored_columns, of_columns FROM pg_temp.stored('lease_claim_batches', 'claim_slot', 'batch_id = ' || :cb)
UNION ALL
SELECT 'closure batch', stored_columns, of_columns FROM pg_temp.stored('lease_claim_closure_batches', 'claim_slot', 'awa._claim_batch_of_closure(batch_id) = ' || :cb)
UNION ALL
SELECT 'completion batch', stored_columns, of_columns FROM pg_temp.stored('receipt_completion_batches', 'ready_slot', 'awa._claim_batch_of_closure(batch_id) = ' || :cb);
SELECT claimed_count FROM awa.ready_claim_attempt_batches WHERE batch_id = :cb;
SELECT claimed_count, first_job_id = :one AS first_job_id, job_ids, run_leases, attempts, max_attempts
  FROM awa.lease_claim_batches WHERE batch_id = :cb;
SELECT outcome, closed_count, claim_indexes FROM awa.lease_claim_closure_batches WHERE awa._claim_batch_of_closure(batch_id) = :cb;
SELECT completed_count, run_leases,
       first_lane_seq = (SELECT e.lane_seq FROM awa.ready_entries e WHERE e.job_id = :one) AS first_lane_seq,
       lane_seqs
  FROM awa.receipt_completion_batches WHERE awa._claim_batch_of_closure(batch_id) = :cb;
SELECT awa.get_job(:one) ->> 'state' AS state;

-- Two jobs in one claim, one with max_attempts 3: every column stored.
SELECT awa.enqueue('two_a', queue => 'rs_ev') AS two_a \gset
SELECT awa.enqueue('two_b', queue => 'rs_ev', max_attempts => 3) AS two_b \gset
SELECT array_agg(job_id ORDER BY job_id) AS jobs, array_agg(run_lease ORDER BY job_id) AS leases,
       array_agg(receipt_id ORDER BY job_id) AS receipts
  FROM awa.claim('rs_ev', 2) \gset
SELECT batch_id AS cb2 FROM awa.lease_claim_batches WHERE first_job_id = :two_a \gset
SELECT stored_columns, of_columns FROM pg_temp.stored('lease_claim_batches', 'claim_slot', 'batch_id = ' || :cb2);
SELECT claimed_count, job_ids, run_leases, attempts, max_attempts FROM awa.lease_claim_batches WHERE batch_id = :cb2;
SELECT count(*) FILTER (WHERE accepted) AS completed FROM awa.complete_many(:'jobs', :'leases', :'receipts');
SELECT stored_columns, of_columns FROM pg_temp.stored('receipt_completion_batches', 'ready_slot', 'awa._claim_batch_of_closure(batch_id) = ' || :cb2);
SELECT outcome, closed_count, claim_indexes FROM awa.lease_claim_closure_batches WHERE awa._claim_batch_of_closure(batch_id) = :cb2;

-- Two jobs whose ids are not consecutive (another queue's job between them):
-- the claim batch stores job_ids whole, and the completion reads them. Their
-- lane positions follow each other, so the row ends after job_ids: 17 of 18
-- columns and no null bitmap (24-byte header).
SELECT awa.enqueue('gap_a', queue => 'rs_ev') AS gap_a \gset
SELECT awa.enqueue('between', queue => 'rs_other') IS NOT NULL AS other_queue;
SELECT awa.enqueue('gap_b', queue => 'rs_ev') AS gap_b \gset
SELECT array_agg(job_id ORDER BY job_id) AS gjobs, array_agg(run_lease ORDER BY job_id) AS gleases,
       array_agg(receipt_id ORDER BY job_id) AS greceipts
  FROM awa.claim('rs_ev', 2) \gset
SELECT batch_id AS cb3 FROM awa.lease_claim_batches WHERE first_job_id = :gap_a \gset
SELECT stored_columns, of_columns, header_bytes, null_bitmap
  FROM pg_temp.stored('lease_claim_batches', 'claim_slot', 'batch_id = ' || :cb3);
SELECT job_ids = ARRAY[:gap_a, :gap_b]::bigint[] AS job_ids_stored,
       awa._claim_job_ids(first_job_id, claimed_count, job_ids) = ARRAY[:gap_a, :gap_b]::bigint[] AS read_back
  FROM awa.lease_claim_batches WHERE batch_id = :cb3;
SELECT count(*) FILTER (WHERE accepted) AS completed FROM awa.complete_many(:'gjobs', :'gleases', :'greceipts');
SELECT awa.get_job(:gap_b) ->> 'state' AS gap_b_state;

-- A table whose columns are of other types where awa writes (a database made
-- by an earlier build of 0.6, with the same number of columns in another
-- order) is refused, and nothing is written.
\i test/sql/include/try.sql
SELECT awa.enqueue('layout', queue => 'rs_ev') AS layout_job \gset
SELECT run_lease AS ll, receipt_id AS lr FROM awa.claim('rs_ev') \gset
BEGIN;
ALTER TABLE awa.lease_claim_closure_batches ALTER COLUMN closed_count TYPE bigint;
SELECT regexp_replace(pg_temp.try(format('SELECT awa.complete(%s, %s, %s)', :layout_job, :ll, :lr)),
                      'closure_batches_[0-9]+', 'closure_batches_N') AS refused;
ROLLBACK;
SELECT awa.get_job(:layout_job) ->> 'state' AS state_after_refusal;
SELECT awa.complete(:layout_job, :ll, :lr) AS completed_after_rollback;
