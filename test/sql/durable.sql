--
-- durable: awa.await_durable() waits until every commit that returned before
-- it is flushed, and returns that position. Queue used here: dur_a.
-- (The crash and the synchronous standby: test/t/020_await_durable.pl; who
-- may call it: security.sql.)
--
\set VERBOSITY default
\i test/sql/include/try.sql

SELECT awa.enqueue('d', queue => 'dur_a') > 0 AS enqueued;
-- A claim in an implicit transaction commits asynchronously.
SELECT count(*) AS claimed FROM awa.claim('dur_a');
SELECT pg_current_wal_insert_lsn() AS before \gset
SELECT awa.await_durable() AS durable \gset
-- The returned position covers every commit before the call, and is flushed.
SELECT :'durable'::pg_lsn >= :'before'::pg_lsn AS covers_earlier_commits,
       pg_current_wal_flush_lsn() >= :'durable'::pg_lsn AS flushed;

-- No argument is accepted; it works inside a transaction block too (it then
-- covers the commits before the block's statement, not the block's own).
SELECT pg_temp.try($$SELECT awa.await_durable(1)$$);
BEGIN;
SELECT awa.await_durable() >= :'durable'::pg_lsn AS in_block;
COMMIT;
-- Nothing it does is transactional: it writes no row.
SELECT count(*) AS jobs FROM awa.ready_entries WHERE queue = 'dur_a';
