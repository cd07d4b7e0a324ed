-- ---------------------------------------------------------------------------
-- Lanes: (queue, priority), or (queue, priority, concurrency_key) for the jobs
-- enqueued with that key (docs/flow-control.md, "Fair share between keys").
-- A lane's row carries its two cursors:
--   enqueue_cursor = highest reserved lane_seq (never rolled back)
--   claim_cursor   = highest lane_seq proven spent (moves forward only)
-- and what makes the first crash-safe while most reservations write no WAL:
--   enqueue_logged = the enqueue cursor as last WAL-logged, up to 32 positions
--                    ahead of it (as nextval logs ahead)
--   cursor_run     = the server run that wrote enqueue_cursor; in another run
--                    (after a crash, on a standby, after a promotion) the
--                    enqueue cursor is read as the greater of the two
-- The row is inserted once, when the lane is first used, and never UPDATEd:
-- awa's C code rewrites the cursors in place, under the page's exclusive
-- lock, with a generic WAL record or none (a reservation within the logged
-- value; a claim cursor move while the WAL is flushed) (src/pg/lane_cursors.cpp), so they are
-- not transactional, leave no dead tuple, survive a crash and reach standbys,
-- as sequences did before with a relation per cursor (docs/architecture.md,
-- "Lane cursors live in the lane's row"). Read them through awa.lanes: a plain
-- SELECT of this table may see a cursor half-written.
-- The five bigint columns come first and are NOT NULL, so each sits at a fixed
-- offset of the row's data; lane_cursors.cpp checks this layout.
-- ---------------------------------------------------------------------------
CREATE TABLE awa.queue_lanes (
    lane_id        bigint   NOT NULL UNIQUE,
    enqueue_cursor bigint   NOT NULL DEFAULT 0,
    claim_cursor   bigint   NOT NULL DEFAULT 0,
    enqueue_logged bigint   NOT NULL DEFAULT 0,
    cursor_run     bigint   NOT NULL DEFAULT 0,
    priority       smallint NOT NULL CHECK (priority BETWEEN 1 AND 4),
    queue          text     NOT NULL CHECK (length(queue) BETWEEN 1 AND 200),
    created_at     timestamptz NOT NULL DEFAULT now(),
    -- NULL: the queue's lane for jobs without a key.
    concurrency_key text    CHECK (octet_length(concurrency_key) BETWEEN 1 AND 255),
    CONSTRAINT queue_lanes_identity UNIQUE NULLS NOT DISTINCT (queue, priority, concurrency_key)
);

-- A key's weight in its queue's fair share (awa.set_key_weight; 1 when absent).
CREATE TABLE awa.key_weights (
    queue           text    NOT NULL CHECK (length(queue) BETWEEN 1 AND 200),
    concurrency_key text    NOT NULL CHECK (octet_length(concurrency_key) BETWEEN 1 AND 255),
    weight          integer NOT NULL CHECK (weight BETWEEN 1 AND 10000),
    PRIMARY KEY (queue, concurrency_key)
);
