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
//   AWA_GRACE           seconds running jobs get to finish after SIGTERM (default: 30);
//                       jobs still running then are handed back with awa.snooze
//                       (run again soon, attempt not used up) and the worker exits
//   AWA_EXIT_WHEN_IDLE  1: exit 0 once the queue has no available, scheduled,
//                       retryable or running job (needs awa_monitor, for queue_metrics)
//
// A handler is called as handler(job, signal): `signal` is an AbortSignal that
// aborts when the handler should give up: the job was cancelled (a heartbeat
// answered cancel_requested), its attempt is no longer live ('stale'), or the
// grace period after SIGTERM ran out ('shutdown'); signal.reason says which.
// Once it aborted, whatever the handler resolves or throws, the worker does
// not complete the job.
//
// node-postgres notes: bigint columns (job_id, run_lease, receipt_id) arrive
// as strings and are passed back as strings, which keeps all 64 bits; jsonb
// parameters must be JSON.stringify'd. Queries without a `name` are not
// prepared on the server, so the worker also runs behind pgbouncer in
// transaction pooling mode.
'use strict';

const net = require('net');
const { setTimeout: sleepFor } = require('timers/promises');
const { Pool } = require('pg');

class PermanentError extends Error {}   // a handler throws it: the job fails now
class Snooze extends Error {            // a handler throws it: run again after `seconds`
  constructor(seconds) { super(`snooze ${seconds}s`); this.seconds = seconds; }
}

const log = (message) => console.error(`[worker ${process.pid}] ${message}`);

// Handlers by job kind: return (or resolve) to complete the job; throw
// PermanentError to fail it, Snooze to snooze it, anything else to retry it.
// A long handler passes `signal` on (fetch, timers/promises) or checks
// signal.aborted, and gives up when it aborts.
const handlers = new Map();
const handler = (kind, fn) => handlers.set(kind, fn);
handler('example.echo', async (job) => job.args);
handler('example.flaky', async (job) => {
  if (job.attempt === 1) throw new Error('flaky: fails on attempt 1');
});
handler('example.fail', async () => { throw new Error('example.fail always fails'); });
handler('example.sleep', async (job, signal) => {
  // Sleeps args.seconds, or until the worker says stop.
  try {
    await sleepFor(1000 * (job.args.seconds ?? 1), undefined, { signal });
  } catch (e) {
    if (!signal.aborted) throw e;
    log(`job ${job.job_id} (example.sleep): handler stopped: ${signal.reason}`);
  }
});

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

// One connection claims (held for the worker's life, so a claim waiting in
// the server can be cancelled on SIGTERM); the others end attempts and
// heartbeat.
const pool = new Pool({ connectionString: config.url, max: config.concurrency + 3 });
// job_id -> { job, triple, controller, ending }; `ending`: the worker has begun
// ending the attempt (it is then no longer handed back).
const running = new Map();
let stopping = false;
let stoppedAt = null;
let claimClient = null;
let claiming = false;

// A CancelRequest (the protocol's, as libpq's PQcancel sends it) for the
// statement running on `client`, over a connection of its own.
function cancelRunningStatement(client) {
  const buf = Buffer.alloc(16);
  buf.writeInt32BE(16, 0);
  buf.writeInt32BE(80877102, 4);
  buf.writeInt32BE(client.processID, 8);
  buf.writeInt32BE(client.secretKey, 12);
  const where = client.host && client.host.startsWith('/')
    ? { path: `${client.host}/.s.PGSQL.${client.port}` } : { host: client.host, port: client.port };
  const s = net.connect(where, () => s.end(buf));
  s.on('error', () => {});
}

async function claim(n) {
  claiming = true;
  try {
    if (stopping) return [];
    const { rows } = await claimClient.query(
      `SELECT job_id, run_lease, receipt_id, kind, args, attempt, max_attempts
         FROM awa.claim($1, $2, make_interval(secs => $3), make_interval(secs => $4))`,
      [config.queue, n, config.deadline, config.wait]);
    return rows;
  } catch (e) {
    if (stopping && e.code === '57014') {   // cancelled by the SIGTERM: the claim rolled back
      log('the waiting claim was cancelled (nothing claimed)');
      return [];
    }
    throw e;
  } finally {
    claiming = false;
  }
}

async function queueIsIdle() {
  const { rows } = await pool.query(
    'SELECT available + scheduled + retryable + running AS left FROM awa.queue_metrics() WHERE queue = $1',
    [config.queue]);
  return rows.length === 0 || Number(rows[0].left) === 0;
}

async function runJob(r) {
  const { job, triple, controller } = r;
  let sql;
  let params;
  try {
    const fn = handlers.get(job.kind);
    if (!fn) throw new PermanentError(`no handler for kind ${job.kind}`);
    await fn(job, controller.signal);
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
  if (controller.signal.aborted) {
    // Cancelled or stale: awa already closed the attempt, nothing to call.
    // Shutdown: main() hands the job back.
    log(`job ${job.job_id} (${job.kind}, attempt ${job.attempt}): not ended by the worker (${controller.signal.reason})`);
    running.delete(job.job_id);
    return;
  }
  r.ending = true;
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

// One heartbeat_many for every running job; an answer other than alive
// (cancel_requested, stale) aborts the job's signal.
async function heartbeat() {
  const beating = [...running.values()].filter((r) => !r.controller.signal.aborted && !r.ending);
  if (beating.length === 0) return;
  let rows;
  try {
    ({ rows } = await pool.query('SELECT job_id, run_lease, status FROM awa.heartbeat_many($1, $2, $3)',
      [0, 1, 2].map((k) => beating.map((r) => r.triple[k]))));
  } catch (e) {
    log(`heartbeat failed: ${e.message}`);
    return;
  }
  rows.forEach((row, i) => {
    if (row.status !== 'alive' && !beating[i].controller.signal.aborted) {
      log(`job ${row.job_id}: heartbeat answered ${row.status}: stopping its handler`);
      beating[i].controller.abort(row.status === 'cancel_requested' ? 'cancelled' : 'stale');
    }
  });
}

// Ends attempts the worker will not finish with awa.snooze(delay 0): the job
// is claimable again as soon as it is promoted, and the attempt is given back
// (the job did nothing wrong).
async function handBack(triples, why) {
  for (const t of triples) {
    try {
      const { rows } = await pool.query("SELECT awa.snooze($1, $2, $3, interval '0') AS outcome", t);
      log(`job ${t[0]}: ${why}: handed back (snooze -> ${rows[0].outcome})`);
    } catch (e) {
      log(`job ${t[0]}: could not hand it back (${e.message}); awa rescues it after its deadline`);
    }
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function onSignal() {
  if (stopping) return;
  stopping = true;
  stoppedAt = Date.now();
  if (claiming && claimClient) cancelRunningStatement(claimClient);
}

async function main() {
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  claimClient = await pool.connect();
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
      claimClient.release(true);
      await sleep(1000);
      claimClient = await pool.connect();
      continue;
    }
    if (stopping && jobs.length > 0) {
      // Claimed as the signal came: not started, handed back at once.
      await handBack(jobs.map((j) => [j.job_id, j.run_lease, j.receipt_id]), 'claimed after SIGTERM');
      break;
    }
    for (const job of jobs) {
      const r = { job, triple: [job.job_id, job.run_lease, job.receipt_id], controller: new AbortController(), ending: false };
      running.set(job.job_id, r);
      runJob(r);   // not awaited: up to AWA_CONCURRENCY run at once; it never rejects
    }
    if (jobs.length === 0 && config.exitWhenIdle && running.size === 0 && await queueIsIdle()) {
      log('the queue is idle: exiting');
      break;
    }
  }
  // Stop claiming; let running jobs finish within the grace period, counted
  // from the signal.
  stopping = true;
  if (stoppedAt === null) stoppedAt = Date.now();
  claimClient.release();
  log(`stopped claiming; ${running.size} job(s) running`);
  const until = stoppedAt + config.grace * 1000;
  while (running.size > 0 && Date.now() < until) await sleep(50);
  // The grace period is over: every job whose attempt the worker has not
  // begun to end is stopped and handed back.
  const left = [...running.values()].filter((r) => !r.ending);
  for (const r of left) r.controller.abort('shutdown');
  if (left.length > 0) {
    log(`${left.length} job(s) still running after the grace period (${config.grace} s)`);
    await handBack(left.map((r) => r.triple), 'grace period over');
  }
  // Attempts being ended right now get a moment to finish their call.
  const endingUntil = Date.now() + 5000;
  while ([...running.values()].some((r) => r.ending) && Date.now() < endingUntil) await sleep(50);
  clearInterval(beat);
  await pool.end();
  process.exit(0);
}

main().catch((e) => { log(e.stack || String(e)); process.exit(1); });
