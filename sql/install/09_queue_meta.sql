-- ---------------------------------------------------------------------------
-- Control plane
-- ---------------------------------------------------------------------------
-- Per-queue settings (awa.configure_queue, pause_queue, resume_queue). A queue
-- without a row has the defaults. Claims read it through a per-backend cache
-- that every change invalidates at commit (src/pg/queue_settings.hpp).
CREATE TABLE awa.queue_meta (
    queue            text        PRIMARY KEY CHECK (length(queue) BETWEEN 1 AND 200),
    paused           boolean     NOT NULL DEFAULT false,
    paused_at        timestamptz,
    dlq_enabled      boolean     NOT NULL DEFAULT false,
    aging_interval   interval    NOT NULL DEFAULT '60 seconds' CHECK (aging_interval >= interval '0'),
    default_deadline interval    CHECK (default_deadline > interval '0'),
    -- At most this many running attempts (NULL: no limit; docs/flow-control.md).
    max_running      integer     CHECK (max_running > 0),
    -- At most rate_count claimed attempts per rate_period, plus rate_burst at
    -- once (NULL: no rate limit; docs/flow-control.md).
    rate_count       integer     CHECK (rate_count > 0),
    rate_period      interval    CHECK (rate_period > interval '0'),
    rate_burst       integer     CHECK (rate_burst > 0),
    -- When the rate limit or its burst was last set: a bucket starts full
    -- only for a limit set since the server became a primary (its start or
    -- its promotion: PrimaryRunSince, src/pg/server_run_key.hpp); not
    -- updated_at, which every change of the queue's settings moves
    -- (test/t/043, test/t/046).
    rate_set_at      timestamptz,
    -- 'key': claims share the queue between the keys of its jobs
    -- (opts.concurrency_key), by their weights; 'none': keys in turn of when
    -- their work arrived (docs/flow-control.md, "Fair share between keys").
    fairness         text        NOT NULL DEFAULT 'none' CHECK (fairness IN ('none', 'key')),
    -- The same limits per key of the queue's jobs (opts.concurrency_key): at
    -- most key_max_running running attempts of one key, over its priorities;
    -- at most key_rate_count per key_rate_period, key_rate_burst at once
    -- (NULL: none; docs/flow-control.md, "Limits per key").
    key_max_running  integer     CHECK (key_max_running > 0),
    key_rate_count   integer     CHECK (key_rate_count > 0),
    key_rate_period  interval    CHECK (key_rate_period > interval '0'),
    key_rate_burst   integer     CHECK (key_rate_burst > 0),
    key_rate_set_at  timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 70);
-- Whether any queue of the database is paused: each backend asks once per
-- change of the settings, and an enqueue parks its jobs only then
-- (src/pg/queue_settings.hpp, AnyQueuePaused).
CREATE INDEX queue_meta_paused_idx ON awa.queue_meta (queue) WHERE paused;

