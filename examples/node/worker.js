#!/usr/bin/env node
// An awa worker in Node.js (node-postgres): claims jobs with a server-side
// wait, runs them AWA_CONCURRENCY at a time, heartbeats while they run, and
// ends each attempt with complete, retry, fail or snooze. See README.md.
//
// Environment:
//   DATABASE_URL        libpq URI (required)
//   AWA_QUEUE           queue to work (default: default)
//   AWA_CONCURRENCY     jobs at once (default: 4)
//   AWA_WAIT            seconds a claim waits in the server for work (default: 5)
//   AWA_DEADLINE        seconds an attempt may run before awa rescues it (default: 300)
//   AWA_HEARTBEAT       seconds between heartbeats of running jobs (default: 10)
//   AWA_GRACE           seconds running jobs get to finish after SIGTERM (default: 30)
//   AWA_EXIT_WHEN_IDLE  1: exit 0 once the queue has no available, scheduled,
//                       retryable or running job (needs awa_monitor, for queue_metrics)
//
// node-postgres notes: bigint columns (job_id, run_lease, receipt_id) arrive
// as strings and are passed back as strings, which keeps all 64 bits; jsonb
// parameters must be JSON.stringify'd. Queries without a `name` are not
// prepared on the server, so the worker also runs behind pgbouncer in
// transaction pooling mode.
'use strict';

const { Pool } = require('pg');

class PermanentError extends Error {}   // a handler throws it: the job fails now
class Snooze extends Error {            // a handler throws it: run again after `seconds`
  constructor(seconds) { super(`snooze ${seconds}s`); this.seconds = seconds; }
}

// Handlers by job kind: return (or resolve) to complete the job; throw
// PermanentError to fail it, Snooze to snooze it, anything else to retry it.
const handlers = new Map();
const handler = (kind, fn) => handlers.set(kind, fn);
handler('example.echo', async (job) => job.args);
handler('example.flaky', async (job) => {
  if (job.attempt === 1) throw new Error('flaky: fails on attempt 1');
});
handler('example.fail', async () => { throw new Error('example.fail always fails'); });
handler('example.sleep', async (job) => new Promise((resolve) => setTimeout(resolve, 1000 * (job.args.seconds ?? 1))));

const env = (name, fallback) => process.env[name] ?? fallback;
const config = {
  url: env('DATABASE_URL'),
  queue: env('AWA_QUEUE', 'default'),
  concurrency: Number(env('AWA_CONCURRENCY', '4')),
  wait: Number(env('AWA_WAIT', '5')),
  deadline: Number(env('AWA_DEADLINE', '300')),
  heartbeat: Number(env('AWA_HEARTBEAT', '10')),
  grace: Number(env('AWA_GRACE', '30')),
  exitWhenIdle: env('AWA_EXIT_WHEN_IDLE') === '1',
};
if (!config.url) { console.error('DATABASE_URL is required'); process.exit(2); }

// One connection claims, the others end attempts and heartbeat.
const pool = new Pool({ connectionString: config.url, max: config.concurrency + 2 });
const log = (message) => console.error(`[worker ${process.pid}] ${message}`);
const running = new Map();   // job_id -> { job_id, run_lease, receipt_id }
let stopping = false;

async function claim(n) {
  const { rows } = await pool.query(
    `SELECT job_id, run_lease, receipt_id, kind, args, attempt, max_attempts
       FROM awa.claim($1, $2, make_interval(secs => $3), make_interval(secs => $4))`,
    [config.queue, n, config.deadline, config.wait]);
  return rows;
}

async function queueIsIdle() {
  const { rows } = await pool.query(
    'SELECT available + scheduled + retryable + running AS left FROM awa.queue_metrics() WHERE queue = $1',
    [config.queue]);
  return rows.length === 0 || Number(rows[0].left) === 0;
}

async function runJob(job) {
  const triple = [job.job_id, job.run_lease, job.receipt_id];
  let sql;
  let params;
  try {
    const fn = handlers.get(job.kind);
    if (!fn) throw new PermanentError(`no handler for kind ${job.kind}`);
    await fn(job);
    sql = 'SELECT awa.complete($1, $2, $3) AS outcome';
    params = triple;
  } catch (e) {
    if (e instanceof Snooze) {
      sql = 'SELECT awa.snooze($1, $2, $3, make_interval(secs => $4)) AS outcome';
      params = [...triple, e.seconds];
    } else if (e instanceof PermanentError) {
      sql = 'SELECT awa.fail($1, $2, $3, $4) AS outcome';
      params = [...triple, e.message];
    } else {
      sql = 'SELECT awa.retry($1, $2, $3, $4) AS outcome';
      params = [...triple, String(e && e.stack ? e.stack.split('\n')[0] : e)];
    }
  }
  try {
    const { rows } = await pool.query(sql, params);
    log(`job ${job.job_id} (${job.kind}, attempt ${job.attempt}): ${sql.split('(')[0].slice(11)} -> ${rows[0].outcome}`);
  } catch (e) {
    // The attempt stays open; awa rescues it after its deadline.
    log(`job ${job.job_id}: could not end the attempt: ${e.message}`);
  } finally {
    running.delete(job.job_id);
  }
}

async function heartbeat() {
  const triples = [...running.values()];
  if (triples.length === 0) return;
  try {
    await pool.query('SELECT * FROM awa.heartbeat_many($1, $2, $3)',
      [triples.map((t) => t.job_id), triples.map((t) => t.run_lease), triples.map((t) => t.receipt_id)]);
  } catch (e) {
    log(`heartbeat failed: ${e.message}`);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  process.on('SIGTERM', () => { stopping = true; });
  process.on('SIGINT', () => { stopping = true; });
  const beat = setInterval(heartbeat, config.heartbeat * 1000);
  log(`working queue '${config.queue}', ${config.concurrency} at once`);
  while (!stopping) {
    const free = config.concurrency - running.size;
    if (free <= 0) { await sleep(10); continue; }
    let jobs;
    try {
      jobs = await claim(free);
    } catch (e) {
      log(`claim failed: ${e.message}; retrying in 1 s`);
      await sleep(1000);
      continue;
    }
    for (const job of jobs) {
      running.set(job.job_id, { job_id: job.job_id, run_lease: job.run_lease, receipt_id: job.receipt_id });
      runJob(job);   // not awaited: up to AWA_CONCURRENCY run at once; it never rejects
    }
    if (jobs.length === 0 && config.exitWhenIdle && running.size === 0 && await queueIsIdle()) {
      log('the queue is idle: exiting');
      break;
    }
  }
  // Stop claiming; let running jobs finish within the grace period.
  stopping = true;
  log(`stopped claiming; ${running.size} job(s) running`);
  const until = Date.now() + config.grace * 1000;
  while (running.size > 0 && Date.now() < until) await sleep(50);
  if (running.size > 0) log(`${running.size} job(s) still running after the grace period; awa rescues them after their deadline`);
  clearInterval(beat);
  await pool.end();
  process.exit(0);
}

main().catch((e) => { log(e.stack || String(e)); process.exit(1); });
