-- rate_limit.sql: a queue's rate limit, awa.configure_queue(queue,
-- rate_limit => 'N per <interval>', burst => B): claims start at most N
-- attempts per interval, B at once (a token bucket in shared memory). The
-- rates here are per hour, so no token comes back while the test runs.
\set VERBOSITY terse
\i test/sql/include/try.sql

SELECT count(*) AS enqueued FROM awa.enqueue_many(array_fill('k'::text, ARRAY[10]), NULL, 'rl_q');
SELECT awa.configure_queue('rl_q', rate_limit => '2 per 1 hour', burst => 3);
SELECT rate_count, rate_period, rate_burst FROM awa.queue_meta WHERE queue = 'rl_q';
-- Set while the server runs, the bucket starts full: a burst of 3, then none.
SELECT count(*) AS burst FROM awa.claim('rl_q', 10);
SELECT count(*) AS then_none FROM awa.claim('rl_q', 10);
-- awa.queue_metrics shows the limit as configure_queue takes it (that text
-- sets it again, in the session's IntervalStyle), and counts the claims it
-- cut: both (3 of 10, then none).
SELECT rate_limit, burst, claims_rate_limited, max_running, claims_limited
  FROM awa.queue_metrics() WHERE queue = 'rl_q';
SELECT awa.configure_queue('rl_q', rate_limit => (SELECT rate_limit FROM awa.queue_metrics() WHERE queue = 'rl_q'));
SELECT rate_count, rate_period, rate_burst FROM awa.queue_meta WHERE queue = 'rl_q';

-- Tokens a claim does not use go back (up to the burst).
SELECT awa.enqueue('k', '{}', 'rl_one') IS NOT NULL AS enqueued;
SELECT awa.configure_queue('rl_one', rate_limit => '1 per 1 hour', burst => 5);
SELECT count(*) AS one_job FROM awa.claim('rl_one', 10);
SELECT count(*) AS enqueued FROM awa.enqueue_many(array_fill('k'::text, ARRAY[10]), NULL, 'rl_one');
SELECT count(*) AS the_other_four FROM awa.claim('rl_one', 10);

-- A claim that rolls back keeps its tokens used (it may have started work).
SELECT count(*) AS enqueued FROM awa.enqueue_many(array_fill('k'::text, ARRAY[5]), NULL, 'rl_rb');
SELECT awa.configure_queue('rl_rb', rate_limit => '1 per 1 hour', burst => 2);
BEGIN;
SELECT count(*) AS in_rolled_back FROM awa.claim('rl_rb', 5);
ROLLBACK;
SELECT count(*) AS after_rollback FROM awa.claim('rl_rb', 5);

-- With a concurrency limit as well: the smaller one decides, and the tokens
-- the concurrency limit left unused go back.
SELECT count(*) AS enqueued FROM awa.enqueue_many(array_fill('k'::text, ARRAY[6]), NULL, 'rl_both');
SELECT awa.configure_queue('rl_both', rate_limit => '1 per 1 hour', burst => 4, max_running => 1);
SELECT count(*) AS one_running FROM awa.claim('rl_both', 5);
SELECT awa.configure_queue('rl_both', max_running => 0);
SELECT count(*) AS three_tokens_left FROM awa.claim('rl_both', 5);
-- Each limit counts the claims it cut: the rate limit both (4 tokens for 5,
-- then the 3 given back for 5), the concurrency limit the first (1 of 4).
SELECT rate_limit, burst, claims_rate_limited, max_running, claims_limited
  FROM awa.queue_metrics() WHERE queue = 'rl_both';

-- NULL leaves the limit; 'none' removes it; a new burst alone keeps the rate.
SELECT awa.configure_queue('rl_q', dlq_enabled => false);
SELECT rate_count, rate_period, rate_burst FROM awa.queue_meta WHERE queue = 'rl_q';
SELECT awa.configure_queue('rl_q', burst => 7);
SELECT rate_count, rate_period, rate_burst FROM awa.queue_meta WHERE queue = 'rl_q';
SELECT awa.configure_queue('rl_q', rate_limit => 'none');
SELECT rate_count, rate_period, rate_burst FROM awa.queue_meta WHERE queue = 'rl_q';
SELECT count(*) AS unlimited FROM awa.claim('rl_q', 10);
SELECT rate_limit IS NULL AS no_rate_limit, burst IS NULL AS no_burst FROM awa.queue_metrics() WHERE queue = 'rl_q';

-- A period too long for its microseconds to fit in 64 bits (about 292,000
-- years and more; a month counts 30 days) is the longest period there is, not
-- a wrapped one: this one (593,000 years, less 17.7 days) wrapped to 1 ms, a
-- token every millisecond.
SELECT count(*) AS enqueued FROM awa.enqueue_many(array_fill('k'::text, ARRAY[3]), NULL, 'rl_long');
SELECT awa.configure_queue('rl_long', rate_limit => '1 per 7116800 months -1526290447384 microseconds', burst => 1);
SELECT count(*) AS the_burst FROM awa.claim('rl_long', 5);
SELECT pg_sleep(0.05);
SELECT count(*) AS no_token_yet FROM awa.claim('rl_long', 5);

-- Bad input: 22023 with a hint, nothing changed.
SELECT awa.configure_queue('rl_q', rate_limit => '5 per 1 minute');
SELECT pg_temp.try($$SELECT awa.configure_queue('rl_q', rate_limit => 'fast')$$);
SELECT pg_temp.try($$SELECT awa.configure_queue('rl_q', rate_limit => '0 per 1 second')$$);
SELECT pg_temp.try($$SELECT awa.configure_queue('rl_q', rate_limit => '5 per -1 second')$$);
SELECT pg_temp.try($$SELECT awa.configure_queue('rl_q', rate_limit => '5 per soon')$$);
SELECT pg_temp.try($$SELECT awa.configure_queue('rl_q', rate_limit => '5 per 1 second', burst => 0)$$);
SELECT rate_count, rate_period, rate_burst FROM awa.queue_meta WHERE queue = 'rl_q';
