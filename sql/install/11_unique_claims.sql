-- Uniqueness ownership: one row per unique key while its job is in one of the
-- key's states (bit i = state i in awa.queue_counts column order). Taken at
-- enqueue; released when the job reaches a final state outside the mask.
CREATE TABLE awa.job_unique_claims (
    unique_key    bytea       PRIMARY KEY,
    job_id        bigint      NOT NULL,
    unique_states smallint    NOT NULL,
    claimed_at    timestamptz NOT NULL
) WITH (fillfactor = 80);
CREATE INDEX job_unique_claims_job_id_idx ON awa.job_unique_claims (job_id);

