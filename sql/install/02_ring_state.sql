-- ---------------------------------------------------------------------------
-- Rings: configuration, append-only rotation ledgers, slot lock targets
-- ---------------------------------------------------------------------------
-- slot_count is the number of partitions of each family (a generation's slot
-- is generation % slot_count, awa._slot_of); width is how many of them the
-- ring keeps in use when nothing holds a slot. The queue and claim rings have
-- spare partitions beyond their width (awa.ring_spare_slots), which a rotation
-- takes while an old slot is left out of reuse (docs/maintenance.md §2).
CREATE TABLE awa.queue_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 4 AND 64),
    width      integer NOT NULL CHECK (width BETWEEN 4 AND slot_count)
);
CREATE TABLE awa.claim_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 2 AND 16),
    width      integer NOT NULL CHECK (width BETWEEN 2 AND slot_count)
);
CREATE TABLE awa.lease_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 2 AND 64),
    width      integer NOT NULL CHECK (width BETWEEN 2 AND slot_count)
);
-- The history ring keeps finished jobs for awa.history_retention after their
-- queue-ring slot is reclaimed (docs/maintenance.md, "History").
CREATE TABLE awa.history_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count integer NOT NULL CHECK (slot_count BETWEEN 4 AND 64),
    width      integer NOT NULL CHECK (width BETWEEN 4 AND slot_count)
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
-- The claim ring's slots can be left out of reuse too (a slot an open
-- transaction holds): the same index finds the generation owning each.
CREATE INDEX claim_ring_rotations_slot_idx ON awa.claim_ring_rotations (slot, generation);

CREATE TABLE awa.queue_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.claim_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.lease_ring_slots (slot smallint PRIMARY KEY);
CREATE TABLE awa.history_ring_slots (slot smallint PRIMARY KEY);

