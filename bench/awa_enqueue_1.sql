-- awa, enqueue 1 job per transaction (awa.enqueue returns the job id).
\set uid random(1, 100000000)
SELECT awa.enqueue('send_email', jsonb_build_object('user_id', :uid::bigint, 'template', 'welcome'), 'bench');
