-- ---------------------------------------------------------------------------
-- Lease ring (PARTITION BY LIST (lease_slot)): materialized attempts that need
-- mutable state (callbacks, long attempts).
-- ---------------------------------------------------------------------------
CREATE TABLE awa.leases (
    lease_slot          smallint    NOT NULL,
    ready_slot          smallint    NOT NULL,
    priority            smallint    NOT NULL,
    lease_generation    bigint      NOT NULL,
    ready_generation    bigint      NOT NULL,
    lane_id             bigint      NOT NULL,
    queue               text        NOT NULL,
    lane_seq            bigint      NOT NULL,
    job_id              bigint      NOT NULL,
    run_lease           bigint      NOT NULL,
    state               text        NOT NULL CHECK (state IN ('running', 'waiting_external')),
    attempt             smallint    NOT NULL,
    max_attempts        smallint    NOT NULL,
    heartbeat_at        timestamptz,
    deadline_at         timestamptz,
    attempted_at        timestamptz NOT NULL,
    callback_id         uuid,
    callback_timeout_at timestamptz,
    PRIMARY KEY (lane_id, lane_seq, lease_slot)
) PARTITION BY LIST (lease_slot);
CREATE INDEX leases_attempt_idx ON awa.leases (job_id, run_lease);

