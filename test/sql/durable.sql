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
-- (pg_current_wal_insert_lsn() right after a page's header is past the WAL
-- written: the call returns the page's start then, below.)
SELECT :'durable'::pg_lsn >= :'before'::pg_lsn
       OR (pg_wal_lsn_diff(:'durable', '0/0') % 8192 = 0 AND pg_wal_lsn_diff(:'before', :'durable') IN (24, 40))
         AS covers_earlier_commits,
       pg_current_wal_flush_lsn() >= :'durable'::pg_lsn AS flushed;

-- When the insert position is the first byte after a page's header (the last
-- record ended exactly at the page's end), nothing is written there yet: the
-- call waits for the page's start. XLogFlush of the position after the header
-- failed with "xlog flush request ... is not satisfied" (src/pg/durability.hpp,
-- InsertedWalEnd). Logical messages of chosen sizes end a record exactly at a
-- page's end: the unpadded size of a message record is o + its length.
DO $$
DECLARE
    o int;
    prev bigint;
    r bigint;
    at bigint;
BEGIN
    -- o: where a message's record grows by 8 bytes (MAXALIGN) at length len,
    -- o + len = that record's size - 7. (Lengths past 255: a record's data
    -- header is 3 bytes longer from 256 on, and only such are emitted below.
    -- A record another process writes meanwhile shows as a size far from the
    -- others and is passed over.)
    FOR len IN 300 .. 324 LOOP
        at := pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0');
        PERFORM pg_logical_emit_message(false, 'p', repeat('x', len));
        r := pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') - at;
        IF o IS NULL AND prev IS NOT NULL AND r = prev + 8 AND r < 500 THEN
            o := r - 7 - len;
        END IF;
        prev := r;
    END LOOP;
    FOR i IN 1 .. 200 LOOP
        at := pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0');
        EXIT WHEN at % 8192 IN (24, 40);
        r := 8192 - at % 8192;
        IF r - o >= 300 THEN
            PERFORM pg_logical_emit_message(false, 'p', repeat('x', (r - o)::int));
        ELSE
            PERFORM pg_logical_emit_message(false, 'p', repeat('x', 400));  -- onto the next page
        END IF;
    END LOOP;
END
$$;
SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') % 8192 IN (24, 40) AS after_a_page_header;
SELECT pg_wal_lsn_diff(awa.await_durable(), '0/0') % 8192 = 0 AS waited_for_the_page_start;

-- No argument is accepted; it works inside a transaction block too (it then
-- covers the commits before the block's statement, not the block's own).
SELECT pg_temp.try($$SELECT awa.await_durable(1)$$);
BEGIN;
SELECT awa.await_durable() >= :'durable'::pg_lsn AS in_block;
COMMIT;
-- Nothing it does is transactional: it writes no row.
SELECT count(*) AS jobs FROM awa.ready_entries WHERE queue = 'dur_a';
