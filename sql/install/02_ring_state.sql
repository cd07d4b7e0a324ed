-- ---------------------------------------------------------------------------
-- Rings: configuration, append-only rotation ledgers, slot lock targets
-- ---------------------------------------------------------------------------
CREATE TABLE awa.queue_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 4 AND 64)
);
CREATE TABLE awa.claim_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 2 AND 16)
);
CREATE TABLE awa.lease_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 2 AND 64)
);
-- The history ring keeps finished jobs for awa.history_retention after their
-- queue-ring slot is reclaimed (docs/maintenance.md, "History").
CREATE TABLE awa.history_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 4 AND 64)
);

-- The current position of a ring is its highest generation. Rotation appends
-- (generation + 1, next slot) with ON CONFLICT DO NOTHING: a compare-and-swap
-- that never updates a row.
CREATE TABLE awa.queue_ring_rotations (
    generation bigint PRIMARY KEY CHECK (generation >= 0),
    slot       smallint NOT NULL CHECK (slot >= 0),
    rotated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE awa.claim_ring_rotations (LIKE awa.queue_ring_rotations INCLUDING ALL);
CREATE TABLE awa.lease_ring_rotations (LIKE awa.queue_ring_rotations INCLUDING ALL);
CREATE TABLE awa.history_ring_rotations (LIKE awa.queue_ring_rotations INCLUDING ALL);
-- The queue ring's slots can stay out of the rotation (a slot whose live rows are
-- too many to copy forward, docs/maintenance.md §3.6): the generation that owns
-- a slot is the newest one the ledger maps to it, found with this index.
CREATE INDEX queue_ring_rotations_slot_idx ON awa.queue_ring_rotations (slot, generation);

CREATE TABLE awa.queue_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.claim_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.lease_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.history_ring_slots (slot smallint PRIMARY KEY);

