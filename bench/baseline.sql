-- baseline.sql: the classic "jobs table + FOR UPDATE SKIP LOCKED" queue that awa is
-- measured against. One table, modelled on the common production shape (River, Oban,
-- Que, GoodJob, graphile-worker all use a variant of it). Only the two indexes the hot
-- path needs exist (primary key + partial fetch index), which is the most favourable
-- set-up for the baseline: production tables usually carry more indexes
-- (kind, args GIN, state/finalized_at for cleanup, unique keys).
--
-- Claim  (bench/base_drain_*.sql): UPDATE ... SET state = 'running' WHERE id IN
--         (SELECT id ... ORDER BY priority, run_at, id LIMIT n FOR UPDATE SKIP LOCKED)
-- Complete: DELETE FROM jobs WHERE id = ANY(ids)   (the delete-on-success pattern of
--         Que, graphile-worker, pgmq.delete and the peers file; keeping rows with
--         state = 'completed' would add a cleanup job on top).
CREATE TABLE public.jobs (
    id           bigserial   PRIMARY KEY,
    queue        text        NOT NULL DEFAULT 'default',
    kind         text        NOT NULL,
    args         jsonb       NOT NULL DEFAULT '{}',
    priority     smallint    NOT NULL DEFAULT 2 CHECK (priority BETWEEN 1 AND 4),
    state        text        NOT NULL DEFAULT 'available'
                 CHECK (state IN ('available', 'scheduled', 'running', 'retryable',
                                  'completed', 'failed', 'cancelled')),
    attempt      smallint    NOT NULL DEFAULT 0,
    max_attempts smallint    NOT NULL DEFAULT 25,
    run_at       timestamptz NOT NULL DEFAULT now(),
    created_at   timestamptz NOT NULL DEFAULT now(),
    locked_at    timestamptz,
    locked_by    text,
    deadline_at  timestamptz,
    finalized_at timestamptz,
    errors       jsonb[],
    metadata     jsonb       NOT NULL DEFAULT '{}',
    tags         text[]      NOT NULL DEFAULT '{}'
);

-- The fetch index: the claim's inner SELECT is a LockRows scan of this index.
CREATE INDEX jobs_fetch_idx ON public.jobs (queue, priority, run_at, id)
    WHERE state = 'available';
