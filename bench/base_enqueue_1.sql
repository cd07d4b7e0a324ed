-- baseline, enqueue 1 job per transaction (INSERT ... RETURNING id).
\set uid random(1, 100000000)
INSERT INTO jobs (queue, kind, args) VALUES ('bench', 'send_email', jsonb_build_object('user_id', :uid::bigint, 'template', 'welcome')) RETURNING id;
