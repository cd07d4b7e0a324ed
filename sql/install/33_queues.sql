-- Raises what a queue argument of the C functions raises (src/core/validate.cpp).
CREATE FUNCTION awa._require_queue(queue text)
RETURNS void
AS 'MODULE_PATHNAME', 'awa_internal_require_queue'
LANGUAGE C VOLATILE;  -- raises: never evaluated ahead of time; not STRICT: NULL raises

-- A rate limit as configure_queue takes it ('100 per 1 second'): the count
-- and the period, or NULLs for NULL and 'none'. `setting` names the
-- parameter in the error (22023 with a hint).
CREATE FUNCTION awa._parse_rate(rate text, setting text, OUT rate_count int, OUT rate_period interval)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    p_rate text[];
BEGIN
    IF rate IS NULL OR lower(btrim(rate)) = 'none' THEN
        RETURN;
    END IF;
    p_rate := regexp_match(rate, '^\s*([0-9]{1,9})\s+per\s+(.+?)\s*$', 'i');
    IF p_rate IS NULL THEN
        RAISE EXCEPTION 'invalid % "%"', setting, rate USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Write how many attempts per how long, such as ''100 per 1 second'', or ''none''.';
    END IF;
    rate_count := p_rate[1]::int;
    BEGIN
        rate_period := p_rate[2]::interval;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
        RAISE EXCEPTION 'invalid % "%"', setting, rate USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Write how many attempts per how long, such as ''100 per 1 second'', or ''none''.';
    END;
    IF rate_count <= 0 OR rate_period <= interval '0' THEN
        RAISE EXCEPTION '% must be positive', setting USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Write how many attempts per how long, such as ''100 per 1 second'', or ''none''.';
    END IF;
END
$$;

-- Creates or changes a queue's settings; NULL leaves a setting as it is.
-- aging_interval and default_deadline are awa.duration: an interval or a
-- number of seconds (14_duration.sql), made intervals once here. max_running:
-- at most that many attempts of the queue run at once (0 removes the limit;
-- src/pg/running_limits.hpp, docs/flow-control.md). rate_limit 'N per
-- <interval>' ('none' removes it) and burst: claims start at most N attempts
-- per interval, burst (default 1) at once (src/pg/counters.hpp, TakeRateTokens).
-- fairness 'key' | 'none': how claims choose between the keys of the queue's
-- jobs (opts.concurrency_key; src/pg/key_lanes.hpp, docs/flow-control.md).
-- key_max_running, key_rate_limit and key_burst: the same limits for each
-- concurrency key of the queue's jobs (src/pg/key_limits.hpp).
CREATE FUNCTION awa.configure_queue(queue text, dlq_enabled boolean DEFAULT NULL,
                                    aging_interval awa.duration DEFAULT NULL,
                                    default_deadline awa.duration DEFAULT NULL,
                                    max_running int DEFAULT NULL,
                                    rate_limit text DEFAULT NULL,
                                    burst int DEFAULT NULL,
                                    fairness text DEFAULT NULL,
                                    key_max_running int DEFAULT NULL,
                                    key_rate_limit text DEFAULT NULL,
                                    key_burst int DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    p_aging interval := aging_interval::interval;
    p_deadline interval := default_deadline::interval;
    p_rate record;
    p_key_rate record;
    p_clear_rate boolean := lower(btrim($6)) = 'none';
    p_clear_key_rate boolean := lower(btrim($10)) = 'none';
    p_key_limits_before boolean;
    p_key_limits_after boolean;
BEGIN
    PERFORM awa._require_queue(queue);
    p_rate := awa._parse_rate($6, 'rate_limit');
    p_key_rate := awa._parse_rate($10, 'key_rate_limit');
    IF $7 IS NOT NULL AND $7 < 1 THEN
        RAISE EXCEPTION 'burst must be at least 1' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass how many attempts may start at once before the rate applies.';
    END IF;
    IF $11 IS NOT NULL AND $11 < 1 THEN
        RAISE EXCEPTION 'key_burst must be at least 1' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass how many attempts of one key may start at once before its rate applies.';
    END IF;
    IF p_aging < interval '0' THEN
        RAISE EXCEPTION 'aging_interval must not be negative' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass 0 for strict priorities, or how long a waiting job takes to gain one priority level.';
    END IF;
    IF p_deadline <= interval '0' THEN
        RAISE EXCEPTION 'default_deadline must be positive' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass how long an attempt may run, such as interval ''5 minutes''.';
    END IF;
    IF $8 IS NOT NULL AND $8 NOT IN ('key', 'none') THEN
        RAISE EXCEPTION 'invalid fairness "%"', $8 USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass ''key'' to share claims between the keys of the queue''s jobs by their weights, or ''none''.';
    END IF;
    IF $5 < 0 THEN
        RAISE EXCEPTION 'max_running must not be negative' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass how many attempts of the queue may run at once, or 0 for no limit.';
    END IF;
    IF $9 < 0 THEN
        RAISE EXCEPTION 'key_max_running must not be negative' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass how many attempts of one concurrency key may run at once, or 0 for no limit.';
    END IF;
    SELECT m.key_max_running IS NOT NULL OR m.key_rate_count IS NOT NULL INTO p_key_limits_before
      FROM awa.queue_meta m WHERE m.queue = $1;
    INSERT INTO awa.queue_meta AS m (queue, dlq_enabled, aging_interval, default_deadline, max_running,
                                     rate_count, rate_period, rate_burst, rate_set_at, fairness,
                                     key_max_running, key_rate_count, key_rate_period, key_rate_burst,
                                     key_rate_set_at)
    VALUES ($1, coalesce($2, false), coalesce(p_aging, interval '60 seconds'), p_deadline, nullif($5, 0),
            p_rate.rate_count, p_rate.rate_period, CASE WHEN p_rate.rate_count IS NOT NULL THEN coalesce($7, 1) END,
            CASE WHEN $6 IS NOT NULL OR $7 IS NOT NULL THEN now() END, coalesce($8, 'none'),
            nullif($9, 0), p_key_rate.rate_count, p_key_rate.rate_period,
            CASE WHEN p_key_rate.rate_count IS NOT NULL THEN coalesce($11, 1) END,
            CASE WHEN $10 IS NOT NULL OR $11 IS NOT NULL THEN now() END)
    ON CONFLICT ON CONSTRAINT queue_meta_pkey DO UPDATE
       SET dlq_enabled = coalesce($2, m.dlq_enabled),
           aging_interval = coalesce(p_aging, m.aging_interval),
           default_deadline = coalesce(p_deadline, m.default_deadline),
           max_running = CASE WHEN $5 IS NULL THEN m.max_running ELSE nullif($5, 0) END,
           rate_count = CASE WHEN p_clear_rate THEN NULL ELSE coalesce(p_rate.rate_count, m.rate_count) END,
           rate_period = CASE WHEN p_clear_rate THEN NULL ELSE coalesce(p_rate.rate_period, m.rate_period) END,
           rate_burst = CASE WHEN p_clear_rate OR coalesce(p_rate.rate_count, m.rate_count) IS NULL THEN NULL
                             ELSE coalesce($7, m.rate_burst, 1) END,
           rate_set_at = CASE WHEN $6 IS NOT NULL OR $7 IS NOT NULL THEN now() ELSE m.rate_set_at END,
           fairness = coalesce($8, m.fairness),
           key_max_running = CASE WHEN $9 IS NULL THEN m.key_max_running ELSE nullif($9, 0) END,
           key_rate_count = CASE WHEN p_clear_key_rate THEN NULL
                                 ELSE coalesce(p_key_rate.rate_count, m.key_rate_count) END,
           key_rate_period = CASE WHEN p_clear_key_rate THEN NULL
                                  ELSE coalesce(p_key_rate.rate_period, m.key_rate_period) END,
           key_rate_burst = CASE WHEN p_clear_key_rate OR coalesce(p_key_rate.rate_count, m.key_rate_count) IS NULL
                                 THEN NULL ELSE coalesce($11, m.key_rate_burst, 1) END,
           key_rate_set_at = CASE WHEN $10 IS NOT NULL OR $11 IS NOT NULL THEN now() ELSE m.key_rate_set_at END,
           updated_at = now()
    RETURNING m.key_max_running IS NOT NULL OR m.key_rate_count IS NOT NULL INTO p_key_limits_after;
    PERFORM awa._queue_meta_changed(queue, p_key_limits_after AND NOT coalesce(p_key_limits_before, false));
END
$$;

-- A key's weight in its queue's fair share (fairness 'key'): among keys that
-- all have work, each gets claims in proportion to its weight (1 to 10,000;
-- default 1). Applies to the key's next claims, also while it has work.
CREATE FUNCTION awa.set_key_weight(queue text, concurrency_key text, weight int)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    PERFORM awa._key_weight_changed($1, $2, $3);  -- checks the three first
    INSERT INTO awa.key_weights AS w (queue, concurrency_key, weight) VALUES ($1, $2, $3)
    ON CONFLICT ON CONSTRAINT key_weights_pkey DO UPDATE SET weight = $3;
END
$$;

-- A paused queue is not claimed; enqueue goes on. The jobs that become
-- available while it is paused (enqueued, promoted when due, moved or retried
-- into it) are parked: kept as deferred rows in state available rather than
-- appended to their lanes, so that its backlog is outside the queue ring,
-- which rotates and prunes as if the queue had none (docs/architecture.md,
-- "A paused queue parks its jobs"). The jobs already in its lanes stay there.
-- awa.resume_queue appends the parked jobs to their lanes, in order, in its
-- own transaction (linear in their number; interruptible).
CREATE FUNCTION awa.pause_queue(queue text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    PERFORM awa._require_queue(queue);
    INSERT INTO awa.queue_meta AS m (queue, paused, paused_at) VALUES ($1, true, now())
    ON CONFLICT ON CONSTRAINT queue_meta_pkey DO UPDATE
       SET paused = true, paused_at = coalesce(m.paused_at, now()), updated_at = now();
    PERFORM awa._queue_meta_changed(queue);
END
$$;

CREATE FUNCTION awa.resume_queue(queue text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    PERFORM awa._require_queue(queue);
    INSERT INTO awa.queue_meta AS m (queue, paused) VALUES ($1, false)
    ON CONFLICT ON CONSTRAINT queue_meta_pkey DO UPDATE
       SET paused = false, paused_at = NULL, updated_at = now();
    PERFORM awa._queue_meta_changed(queue);
    PERFORM awa._unpark_queue(queue);
END
$$;

-- The exact counts of a queue (of every queue: NULL), as JSON rows, counted
-- under one snapshot taken after the ring tables are held (awa._hold_rings),
-- so counting during a prune misses nothing it carries or copies to the
-- history ring; the locks are released as it returns. A queue without jobs
-- has a row of zeros.
CREATE FUNCTION awa._queue_counts_held(p_queue text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    counted jsonb;
    release boolean;
BEGIN
    BEGIN
        release := awa._hold_rings();
        SELECT coalesce(jsonb_agg(to_jsonb(c)), '[]') INTO counted FROM awa._queue_counts_scan(p_queue) c;
        IF release THEN
            RAISE SQLSTATE 'AWARL';
        END IF;
    EXCEPTION WHEN SQLSTATE 'AWARL' THEN
        NULL;  -- the block's locks are released; counted is kept
    END;
    IF p_queue IS NOT NULL AND jsonb_array_length(counted) = 0 THEN
        counted := jsonb_build_array(jsonb_build_object('queue', p_queue, 'available', 0, 'scheduled', 0,
                                                        'retryable', 0, 'running', 0, 'completed', 0,
                                                        'failed', 0, 'cancelled', 0, 'dlq', 0));
    END IF;
    RETURN counted;
END
$$;

-- queue_counts' columns counted from the tables (cost grows with the backlog).
CREATE FUNCTION awa.queue_counts_exact(queue text DEFAULT NULL)
RETURNS TABLE (queue text, available bigint, scheduled bigint, retryable bigint, running bigint,
               completed bigint, failed bigint, cancelled bigint, dlq bigint)
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT awa._require_queue($1) WHERE $1 IS NOT NULL;
-- This transaction's own enqueues are counted as written.
SELECT awa._flush_enqueues();
SELECT c.* FROM jsonb_to_recordset(awa._queue_counts_held($1))
           AS c(queue text, available bigint, scheduled bigint, retryable bigint, running bigint,
                completed bigint, failed bigint, cancelled bigint, dlq bigint)
$$;

