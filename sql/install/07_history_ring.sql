-- ---------------------------------------------------------------------------
-- History ring (PARTITION BY LIST (history_slot)): one row per finished job
-- (completed, failed, cancelled), written by the queue-ring prune that
-- reclaims the job's slot, in the same transaction as its TRUNCATE, and
-- reclaimed by TRUNCATE once every row of its slot is older than
-- awa.history_retention. Insert-only, like every ring.
-- ---------------------------------------------------------------------------
CREATE TABLE awa.job_history (
    history_slot smallint    NOT NULL,
    job_id       bigint      NOT NULL,
    queue        text        NOT NULL,
    priority     smallint    NOT NULL,
    kind         text        NOT NULL,
    args         jsonb       NOT NULL,
    state        text        NOT NULL,
    attempt      smallint    NOT NULL,
    max_attempts smallint    NOT NULL,
    run_lease    bigint      NOT NULL,
    run_at       timestamptz NOT NULL,
    created_at   timestamptz NOT NULL,
    attempted_at timestamptz,
    finalized_at timestamptz NOT NULL,
    unique_key   bytea,
    payload      jsonb
) PARTITION BY LIST (history_slot);
CREATE INDEX job_history_job_id_idx ON awa.job_history (job_id);
-- The failed and cancelled jobs among the completed ones, newest first
-- (awa.list_jobs with state 'failed' or 'cancelled'; written by prunes, in
-- bulk, never on a claim's or a completion's path).
CREATE INDEX job_history_unsuccessful_idx ON awa.job_history (job_id) WHERE state <> 'completed';

