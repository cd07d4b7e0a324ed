-- awa, enqueue 100 jobs per transaction with one awa.enqueue_many call.
-- The 100 args are built server side, exactly as in base_enqueue_100.sql.
\set uid random(1, 100000000)
SELECT count(*) FROM awa.enqueue_many(array_fill('send_email'::text, ARRAY[100]), ARRAY(SELECT jsonb_build_object('user_id', :uid::bigint + g, 'template', 'welcome') FROM generate_series(1, 100) AS g), 'bench');
