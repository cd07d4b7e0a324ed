-- ---------------------------------------------------------------------------
-- Worker calls that end a running attempt other than by success
-- (src/pg/fn_end_attempt.cpp).
-- ---------------------------------------------------------------------------
-- delay is an awa.duration: an interval or a number of seconds (14_duration.sql).
-- retryable (after delay, or backoff ~2^attempt s with jitter, at most 24 h);
-- failed or dlq when the attempt was the last one; stale.
CREATE FUNCTION awa.retry(job_id bigint, run_lease bigint, receipt_id bigint, error text,
                          delay awa.duration DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_retry'
LANGUAGE C VOLATILE SECURITY DEFINER;

-- scheduled (the attempt is given back) or stale.
CREATE FUNCTION awa.snooze(job_id bigint, run_lease bigint, receipt_id bigint, delay awa.duration)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_snooze'
LANGUAGE C VOLATILE SECURITY DEFINER;

-- failed, dlq (the queue has DLQ on) or stale.
CREATE FUNCTION awa.fail(job_id bigint, run_lease bigint, receipt_id bigint, error text)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_fail'
LANGUAGE C VOLATILE SECURITY DEFINER;

