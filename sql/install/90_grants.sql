-- ---------------------------------------------------------------------------
-- Privileges: awa_producer enqueues; awa_worker claims and ends attempts;
-- awa_admin may do everything. Nothing is executable by PUBLIC.
-- ---------------------------------------------------------------------------
DO $grants$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.pronamespace = 'awa'::regnamespace LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
END
$grants$;

GRANT EXECUTE ON FUNCTION awa.enqueue(text, jsonb, text, int, timestamptz, int, jsonb),
                          awa.enqueue_many(text[], jsonb[], text, int[], timestamptz[], int, jsonb[])
    TO awa_producer, awa_admin;
GRANT EXECUTE ON FUNCTION awa.claim(text, int, awa.duration, awa.duration, boolean),
                          awa.complete(bigint, bigint, bigint),
                          awa.complete_many(bigint[], bigint[], bigint[]),
                          awa.heartbeat(bigint, bigint, bigint, jsonb),
                          awa.heartbeat_many(bigint[], bigint[], bigint[], jsonb[]),
                          awa.retry(bigint, bigint, bigint, text, awa.duration),
                          awa.snooze(bigint, bigint, bigint, awa.duration),
                          awa.fail(bigint, bigint, bigint, text)
    TO awa_worker, awa_admin;
-- The casts from numbers to awa.duration (14_duration.sql) run as the caller,
-- before the function it passes the number to: the roles that call a function
-- taking a duration may execute them. (Its input and output functions, like
-- every type's, need no privilege.)
GRANT EXECUTE ON FUNCTION awa.duration_from_int2(smallint),
                          awa.duration_from_int4(integer),
                          awa.duration_from_int8(bigint),
                          awa.duration_from_float4(real),
                          awa.duration_from_float8(double precision),
                          awa.duration_from_numeric(numeric)
    TO awa_worker, awa_admin;
GRANT EXECUTE ON FUNCTION awa.await_durable() TO awa_producer, awa_worker, awa_admin;
GRANT EXECUTE ON FUNCTION awa.cancel(bigint),
                          awa.get_job(bigint),
                          awa.promote_due(int),
                          awa.queue_counts(text),
                          awa.queue_counts_exact(text),
                          awa.rebuild_counters(),
                          awa.configure_queue(text, boolean, awa.duration, awa.duration, int, text, int, text, int, text, int),
                          awa.set_key_weight(text, text, int),
                          awa.pause_queue(text),
                          awa.resume_queue(text),
                          awa.dlq_retry(bigint[]),
                          awa.dlq_purge(bigint[]),
                          awa.lane_cursors(text),
                          awa.run_maintenance(text),
                          awa.storage_status(),
                          awa.maintenance_status()
    TO awa_admin;
GRANT EXECUTE ON FUNCTION awa.schedule_periodic(text, text, text, jsonb, text, int, text, jsonb),
                          awa.unschedule_periodic(text),
                          awa.periodic_next(text, text, timestamptz)
    TO awa_admin;
GRANT EXECUTE ON FUNCTION awa.bulk_count(text, text, text, text, text, jsonb, timestamptz, timestamptz, jsonb, text, int),
                          awa.bulk_start(text, text, text, text, text, jsonb, timestamptz, timestamptz, jsonb, text, int),
                          awa.bulk_step(bigint, int),
                          awa.bulk_cancel(bigint),
                          awa.move_jobs(bigint[], text),
                          awa.set_priority(bigint[], int),
                          awa.retry_jobs(bigint[])
    TO awa_admin;
GRANT SELECT ON awa.lanes, awa.dlq, awa.periodic_jobs, awa.bulk_operations TO awa_admin;
GRANT EXECUTE ON FUNCTION awa.list_jobs(text, text, text, text, jsonb, timestamptz, timestamptz, bigint, int, jsonb)
    TO awa_monitor, awa_admin;
-- The two ways of awa.list_jobs (which runs as its caller) into the job
-- store: the one with payloads only for awa_payload_reader, the one without
-- for the roles that may list jobs (34_list_jobs.sql). The only awa._*
-- functions granted to anyone.
GRANT EXECUTE ON FUNCTION awa._list_jobs_payloads(text, text, text, text, jsonb, timestamptz, timestamptz, bigint,
                                                  int, jsonb)
    TO awa_payload_reader;
GRANT EXECUTE ON FUNCTION awa._list_jobs_plain(text, text, text, text, timestamptz, timestamptz, bigint, int)
    TO awa_monitor, awa_admin;
GRANT EXECUTE ON FUNCTION awa.queue_metrics(),
                          awa.key_metrics(text, int),
                          awa.job_event_totals(),
                          awa.waiting_claims(),
                          awa.periodic_status(),
                          awa.storage_status(),
                          awa.maintenance_status()
    TO awa_monitor, awa_admin;
