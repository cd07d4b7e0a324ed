-- ---------------------------------------------------------------------------
-- Lanes: (queue, priority). A lane's row carries its two cursors:
--   enqueue_cursor = highest reserved lane_seq (never rolled back)
--   claim_cursor   = highest lane_seq proven spent (moves forward only)
-- The row is inserted once, when the lane is first used, and never UPDATEd:
-- awa's C code rewrites the two cursors in place, under the page's exclusive
-- lock and with a generic WAL record (src/pg/lane_cursors.cpp), so they are
-- not transactional, leave no dead tuple, survive a crash and reach standbys,
-- as sequences did before with a relation per cursor (docs/architecture.md,
-- "Lane cursors live in the lane's row"). Read them through awa.lanes: a plain
-- SELECT of this table may see a cursor half-written.
-- The three bigint columns come first and are NOT NULL, so each sits at a fixed
-- offset of the row's data; lane_cursors.cpp checks this layout.
-- ---------------------------------------------------------------------------
CREATE TABLE awa.queue_lanes (
    lane_id        bigint   NOT NULL UNIQUE,
    enqueue_cursor bigint   NOT NULL DEFAULT 0,
    claim_cursor   bigint   NOT NULL DEFAULT 0,
    priority       smallint NOT NULL CHECK (priority BETWEEN 1 AND 4),
    queue          text     NOT NULL CHECK (length(queue) BETWEEN 1 AND 200),
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, priority)
);
