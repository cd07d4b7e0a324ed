-- ---------------------------------------------------------------------------
-- Periodic jobs (docs/periodic.md): one row per schedule. The maintenance
-- worker's periodic step enqueues a due tick and moves next_run_at in one
-- transaction, under the row's lock, so each tick is enqueued once.
-- ---------------------------------------------------------------------------
CREATE TABLE awa.periodic_schedules (
    name        text        PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 200),
    schedule    text        NOT NULL,
    timezone    text        NOT NULL,
    kind        text        NOT NULL,
    args        jsonb       NOT NULL,
    queue       text        NOT NULL,
    priority    smallint    NOT NULL,
    opts        jsonb       NOT NULL,
    next_run_at timestamptz NOT NULL,  -- the next tick to enqueue
    last_run_at timestamptz,           -- the last tick enqueued
    last_job_id bigint,                -- the job of that tick
    last_error  text,                  -- why the last step could not enqueue; NULL once one did
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX periodic_schedules_due_idx ON awa.periodic_schedules (next_run_at);

