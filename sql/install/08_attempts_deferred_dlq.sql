-- ---------------------------------------------------------------------------
-- Plain tables
-- ---------------------------------------------------------------------------
-- Heartbeat and progress of long attempts; created lazily, deleted when the
-- attempt ends. Short jobs never touch it.
CREATE TABLE awa.attempt_state (
    job_id       bigint NOT NULL,
    run_lease    bigint NOT NULL,
    heartbeat_at timestamptz,
    progress     jsonb,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (job_id, run_lease)
) WITH (fillfactor = 80);

-- Jobs that are not in a lane: future run_at (scheduled), backoff
-- (retryable), and the available jobs of a paused queue (available: parked;
-- docs/architecture.md, "A paused queue parks its jobs"), which wait here
-- rather than in the queue ring, so that a paused queue that keeps
-- receiving jobs costs the ring's rotations and prunes nothing.
CREATE TABLE awa.deferred_jobs (
    job_id        bigint PRIMARY KEY,
    queue         text        NOT NULL,
    priority      smallint    NOT NULL CHECK (priority BETWEEN 1 AND 4),
    kind          text        NOT NULL,
    args          jsonb       NOT NULL,
    state         text        NOT NULL CHECK (state IN ('scheduled', 'retryable', 'available')),
    run_at        timestamptz NOT NULL,
    run_lease     bigint      NOT NULL DEFAULT 0,
    attempt       smallint    NOT NULL DEFAULT 0,
    max_attempts  smallint    NOT NULL,
    created_at    timestamptz NOT NULL,
    finalized_at  timestamptz,
    unique_key    bytea,
    unique_states smallint,
    payload       jsonb
);
-- Promotion walks due jobs in (run_at, priority, job_id) order and stops at
-- its batch size; parked jobs are not in this walk (they are due already).
CREATE INDEX deferred_jobs_due_idx ON awa.deferred_jobs (run_at, priority, job_id) WHERE state <> 'available';
-- Parked jobs, a queue's in the order they go to their lanes when it resumes
-- (awa.resume_queue) or when promotion finds them in a queue that is not
-- paused; promotion finds those queues by a skip scan of the first column.
CREATE INDEX deferred_jobs_parked_idx ON awa.deferred_jobs (queue, run_at, priority, job_id) WHERE state = 'available';
CREATE INDEX deferred_jobs_unique_key_idx ON awa.deferred_jobs (unique_key) WHERE unique_key IS NOT NULL;
-- awa.list_jobs by queue reads a queue's deferred jobs newest first along it
-- (along the primary key it passed over every other queue's).
CREATE INDEX deferred_jobs_queue_idx ON awa.deferred_jobs (queue, job_id);

CREATE TABLE awa.dlq_entries (
    job_id             bigint PRIMARY KEY,
    queue              text        NOT NULL,
    priority           smallint    NOT NULL,
    kind               text        NOT NULL,
    args               jsonb       NOT NULL,
    run_lease          bigint      NOT NULL,
    original_run_lease bigint      NOT NULL,
    attempt            smallint    NOT NULL,
    max_attempts       smallint    NOT NULL,
    run_at             timestamptz NOT NULL,
    created_at         timestamptz NOT NULL,
    unique_key         bytea,
    unique_states      smallint,
    payload            jsonb,
    dlq_reason         text        NOT NULL,
    dlq_at             timestamptz NOT NULL
);
CREATE INDEX dlq_entries_queue_idx ON awa.dlq_entries (queue, dlq_at DESC);


-- The failed and cancelled records of jobs retried since (awa.retry_jobs):
-- such a record (a done row of the queue ring, or a row of the history ring)
-- is never deleted one by one, so it stays until its slot is reclaimed, and
-- every reader passes over it (the job lives on in a later incarnation):
-- awa._get_job, awa.cancel, the exact count, the history copy, the release
-- of finished jobs' counts and unique keys. A row leaves with its record
-- (the prune of its queue-ring slot, the history step). (job_id, run_lease)
-- names one terminal record: each incarnation after a retry has a higher
-- run_lease.
CREATE TABLE awa.superseded_records (
    job_id     bigint      NOT NULL,
    run_lease  bigint      NOT NULL,
    retried_at timestamptz NOT NULL,
    PRIMARY KEY (job_id, run_lease)
);
