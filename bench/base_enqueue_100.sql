-- baseline, enqueue 100 jobs per transaction with one INSERT ... SELECT.
\set uid random(1, 100000000)
WITH i AS (INSERT INTO jobs (queue, kind, args) SELECT 'bench', 'send_email', jsonb_build_object('user_id', :uid::bigint + g, 'template', 'welcome') FROM generate_series(1, 100) AS g RETURNING id) SELECT count(*) FROM i;
