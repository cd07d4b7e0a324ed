-- ---------------------------------------------------------------------------
-- Lanes: (queue, priority). Cursors live in two sequences per lane:
--   enqueue cursor = highest reserved lane_seq (nextval, never rolled back)
--   claim cursor   = highest lane_seq proven spent (setval, moves forward only)
-- The row is written once, when the lane is first used, and never updated.
-- ---------------------------------------------------------------------------
CREATE TABLE awa.queue_lanes (
    queue       text     NOT NULL CHECK (length(queue) BETWEEN 1 AND 200),
    priority    smallint NOT NULL CHECK (priority BETWEEN 1 AND 4),
    lane_id     bigint   NOT NULL UNIQUE,
    enqueue_seq regclass NOT NULL,
    claim_seq   regclass NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, priority)
);

