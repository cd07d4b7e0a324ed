-- baseline worker loop, claim batch 1: UPDATE ... FOR UPDATE SKIP LOCKED (own transaction),
-- then DELETE the job (own transaction); skipped when the claim was empty.
-- An empty claim is followed by a 1 ms pause, as a real worker backs off (same rule for every system).
WITH c AS (UPDATE jobs SET state = 'running', attempt = attempt + 1, locked_at = now(), locked_by = 'worker-' || :client_id, deadline_at = now() + interval '5 minutes'
    WHERE id IN (SELECT id FROM jobs WHERE queue = 'bench' AND state = 'available' AND run_at <= now() ORDER BY priority, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id, kind, args, attempt, max_attempts, deadline_at, created_at, metadata)
SELECT count(*) AS n, coalesce(max(id), 0) AS j FROM c \gset
\if :n > 0
DELETE FROM jobs WHERE id = :j;
\else
\sleep 1 ms
\endif
