'use strict';
// The web UI in a real browser (Debian's Chromium, headless, driven by
// puppeteer-core) against the real UI server (server.js, started as a child
// process) and a real PostgreSQL with awa, which test/ui/run.sh starts:
//   AWA_TEST_DATABASE_URL  the database, as a superuser (to make jobs and check outcomes)
//   AWA_UI_DATABASE_URL    the same database as the UI's role (awa_monitor and awa_admin member)
// Every outcome is checked in the database, not only on the page.
const nodeTest = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const net = require('node:net');
const http = require('node:http');
const path = require('node:path');
const { Client } = require('pg');
const puppeteer = require('puppeteer-core');

const PASSWORD = 'a-test-password-of-length';
const WAIT = { timeout: 60000 }; // a liveness bound for the page, never a speed assertion

// Every test ends: one that hangs (a server that never answers) fails after
// this long instead of holding the suite (a liveness bound, like WAIT).
function test(name, fn) {
  return nodeTest(name, { timeout: 180000 }, fn);
}
test.before = nodeTest.before;
test.after = nodeTest.after;

let db;
let browser;
const servers = [];

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function startUi(extraEnv) {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'server.js')], {
    env: { PATH: process.env.PATH, DATABASE_URL: process.env.AWA_UI_DATABASE_URL, AWA_UI_PORT: String(port),
      AWA_UI_SAMPLE_SECONDS: '1', ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (d) => { log += d; });
  child.stderr.on('data', (d) => { log += d; });
  servers.push(child);
  await new Promise((resolve, reject) => {
    const check = () => {
      if (log.includes('listening on')) return resolve();
      if (child.exitCode !== null) return reject(new Error(`UI server exited: ${log}`));
      setTimeout(check, 50);
    };
    check();
  });
  return { base: `http://127.0.0.1:${port}`, child, log: () => log };
}

async function sql(text, values) {
  return (await db.query(text, values)).rows;
}

async function enqueue(kind, args, queue, opts = {}) {
  const r = await sql('SELECT awa.enqueue($1, $2::jsonb, queue => $3, opts => $4::jsonb) AS id',
    [kind, JSON.stringify(args), queue, JSON.stringify(opts)]);
  return String(r[0].id);
}

// Claims up to n jobs of queue and fails them (into the DLQ when the queue
// has it). A claim takes from one lane and may return fewer than it asks
// for (docs/sql-reference.md, awa.claim): claims repeat until n or none.
async function failJobs(queue, n, error) {
  const ids = [];
  while (ids.length < n) {
    const got = (await sql(`SELECT c.job_id::text AS id, awa.fail(c.job_id, c.run_lease, c.receipt_id, $3)
                              FROM awa.claim($1, $2) c`, [queue, n - ids.length, error])).map((r) => r.id);
    if (got.length === 0) break;
    ids.push(...got);
  }
  return ids;
}

async function stateOf(id) {
  return (await sql('SELECT awa.get_job($1::bigint) ->> \'state\' AS s', [id]))[0].s;
}

// A page in a context of its own: its own cookies, so its own visitor.
async function newPage() {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  const close = page.close.bind(page);
  page.close = async () => {
    await close();
    await context.close();
  };
  page.on('dialog', (d) => d.accept());
  return page;
}

async function login(page, base) {
  await page.goto(`${base}/login`);
  await page.type('input[name=password]', PASSWORD);
  await Promise.all([page.waitForNavigation(), page.click('#login button')]);
  assert.equal(await page.$eval('.badge.admin', (e) => e.textContent), 'admin');
}

// POST a form from the page (same origin, its cookies), as a hostile script or a stale tab would.
function postFrom(page, action, fields) {
  return page.evaluate(async (a, f) => {
    const r = await fetch(a, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(f).toString(), redirect: 'manual' });
    return { status: r.status, type: r.type, text: await r.text() };
  }, action, fields);
}

let ro; // the UI without AWA_UI_ADMIN_PASSWORD: read-only
let rw; // the UI with it

test.before(async () => {
  db = new Client({ connectionString: process.env.AWA_TEST_DATABASE_URL });
  await db.connect();
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  ro = await startUi({});
  rw = await startUi({ AWA_UI_ADMIN_PASSWORD: PASSWORD });
});

test.after(async () => {
  for (const s of servers) s.kill('SIGTERM');
  if (browser) await browser.close();
  if (db) await db.end();
});

test('the UI refuses to start without DATABASE_URL, or with a role that is not an awa_monitor member', async () => {
  const run = (env) => new Promise((resolve) => {
    const c = spawn(process.execPath, [path.join(__dirname, '..', 'server.js')], { env: { PATH: process.env.PATH, ...env } });
    let out = '';
    c.stderr.on('data', (d) => { out += d; });
    c.on('exit', (code) => resolve({ code, out }));
  });
  const none = await run({});
  assert.equal(none.code, 2);
  assert.match(none.out, /DATABASE_URL is not set/);
  const url = new URL(process.env.AWA_UI_DATABASE_URL);
  url.username = 'awa_ui_outsider';
  const outsider = await run({ DATABASE_URL: url.toString(), AWA_UI_PORT: String(await freePort()) });
  assert.equal(outsider.code, 1);
  assert.match(outsider.out, /not a member of awa_monitor/);
  const short = await run({ DATABASE_URL: process.env.AWA_UI_DATABASE_URL, AWA_UI_ADMIN_PASSWORD: 'short' });
  assert.equal(short.code, 2);
  assert.match(short.out, /at least 12 characters/);
});

test('the overview shows awa.queue_counts() and refreshes it live', async () => {
  await sql("SELECT awa.configure_queue('ui_overview', dlq_enabled => true)");
  for (let i = 0; i < 7; i++) await enqueue('ov', { i }, 'ui_overview');
  await failJobs('ui_overview', 2, 'boom');
  const page = await newPage();
  await page.goto(`${ro.base}/`);
  await page.waitForFunction(() => Number(document.getElementById('refreshed').getAttribute('data-refreshes') || 0) >= 1, WAIT);
  const shown = await page.$$eval('#counts tbody tr', (rows) => rows.map((r) => {
    const o = { queue: r.getAttribute('data-queue') };
    for (const td of r.querySelectorAll('td[data-state]')) o[td.getAttribute('data-state')] = td.textContent;
    return o;
  }));
  const counts = await sql('SELECT * FROM awa.queue_counts() ORDER BY queue');
  assert.deepEqual(shown.map((r) => r.queue), counts.map((r) => r.queue));
  for (const c of counts) {
    const s = shown.find((r) => r.queue === c.queue);
    for (const st of ['available', 'running', 'scheduled', 'retryable', 'completed', 'failed', 'cancelled', 'dlq']) {
      assert.equal(s[st], String(c[st]), `${c.queue} ${st}`);
    }
  }
  assert.equal((await sql("SELECT available, dlq FROM awa.queue_counts('ui_overview')"))[0].available, '5');
  // A job enqueued now shows without a reload.
  await enqueue('ov', { i: 99 }, 'ui_overview');
  await page.waitForFunction(() => {
    const td = document.querySelector('#counts tr[data-queue="ui_overview"] td[data-state="available"]');
    return td && td.textContent === '6';
  }, WAIT);
  // The charts draw from the sampler's points.
  await page.waitForFunction(() => document.querySelectorAll('#throughput-chart path').length === 4, WAIT);
  await page.close();
});

// A GET with a Host header of our choosing (a browser's page cannot set it).
function getWithHost(base, pathname, host) {
  return new Promise((resolve, reject) => {
    const u = new URL(base);
    const req = http.request({ host: u.hostname, port: u.port, path: pathname, headers: { Host: host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end();
  });
}

test('a request for another host name is refused (DNS rebinding)', async () => {
  const port = new URL(ro.base).port;
  assert.equal(await getWithHost(ro.base, '/', 'attacker.example'), 421);
  assert.equal(await getWithHost(ro.base, '/api/overview', `attacker.example:${port}`), 421);
  assert.equal(await getWithHost(ro.base, '/', `localhost:${port}`), 200);
  assert.equal(await getWithHost(ro.base, '/', `127.0.0.1:${port}`), 200);
});

test('read-only: no args, no action forms, and actions are refused', async () => {
  const id = await enqueue('secret', { card: '4111-1111' }, 'ui_readonly');
  const page = await newPage();
  await page.goto(`${ro.base}/jobs?queue=ui_readonly`);
  const text = await page.$eval('main', (m) => m.textContent);
  assert.ok(text.includes('secret'));
  assert.ok(!text.includes('4111'), 'a read-only visitor sees no args');
  assert.equal(await page.$$eval('main form[method=post]', (f) => f.length), 0);
  await page.goto(`${ro.base}/jobs/${id}`);
  assert.equal(await page.$eval('#job-state', (e) => e.textContent), 'available');
  assert.ok(!(await page.$eval('main', (m) => m.textContent)).includes('4111'));
  // A POST with a valid CSRF token but no login (there is none to have): refused.
  await page.goto(`${ro.base}/login`);
  const csrf = await page.evaluate(() => document.cookie); // HttpOnly: the script sees no session cookie
  assert.equal(csrf, '');
  const token = await page.$eval('input[name=csrf]', (e) => e.value).catch(() => null);
  assert.equal(token, null, 'no login form when AWA_UI_ADMIN_PASSWORD is unset');
  await page.goto(`${ro.base}/queues`);
  const r = await postFrom(page, '/actions/queue/pause', { queue: 'ui_readonly', csrf: 'x' });
  assert.equal(r.status, 403);
  assert.equal((await sql("SELECT paused FROM awa.queue_metrics() WHERE queue = 'ui_readonly'"))[0].paused, false);
  await page.close();
});

test('an action without login or without the CSRF token is refused and changes nothing', async () => {
  await enqueue('k', {}, 'ui_csrf');
  const page = await newPage();
  await page.goto(`${rw.base}/login`);
  const anonToken = await page.$eval('input[name=csrf]', (e) => e.value);
  // Not logged in, with the visitor's own valid token.
  let r = await postFrom(page, '/actions/queue/pause', { queue: 'ui_csrf', csrf: anonToken });
  assert.equal(r.status, 403);
  assert.match(r.text, /log in first/);
  await login(page, rw.base);
  // Logged in, without a token, with a wrong one, with the token of the session before login.
  r = await postFrom(page, '/actions/queue/pause', { queue: 'ui_csrf' });
  assert.equal(r.status, 403);
  assert.match(r.text, /CSRF/);
  r = await postFrom(page, '/actions/queue/pause', { queue: 'ui_csrf', csrf: 'f'.repeat(64) });
  assert.equal(r.status, 403);
  r = await postFrom(page, '/actions/queue/pause', { queue: 'ui_csrf', csrf: anonToken });
  assert.equal(r.status, 403);
  // A login form posted without its token is refused too.
  const fresh = await browser.createBrowserContext();
  const other = await fresh.newPage();
  await other.goto(`${rw.base}/login`);
  r = await postFrom(other, '/login', { password: PASSWORD });
  assert.equal(r.status, 403);
  await fresh.close();
  assert.equal((await sql("SELECT paused FROM awa.queue_metrics() WHERE queue = 'ui_csrf'"))[0].paused, false);
  // A form over 64 KB: 413, not a reset connection.
  r = await postFrom(page, '/actions/queue/pause', { queue: 'ui_csrf', pad: 'x'.repeat(70 * 1024) });
  assert.equal(r.status, 413);
  // A wrong password gives no session.
  const ctx2 = await browser.createBrowserContext();
  const p2 = await ctx2.newPage();
  await p2.goto(`${rw.base}/login`);
  await p2.type('input[name=password]', 'not-the-password!');
  await Promise.all([p2.waitForNavigation(), p2.click('#login button')]);
  assert.match(await p2.$eval('main', (m) => m.textContent), /Wrong password/);
  assert.equal(await p2.$('.badge.admin'), null);
  await ctx2.close();
  await page.close();
});

test('pausing and resuming a queue in the UI shows in awa.queue_metrics()', async () => {
  await enqueue('k', {}, 'ui_pause');
  const page = await newPage();
  await login(page, rw.base);
  await page.goto(`${rw.base}/queues`);
  await Promise.all([page.waitForNavigation(), page.click('tr[data-queue="ui_pause"] form[action="/actions/queue/pause"] button')]);
  assert.match(await page.$eval('.flash', (e) => e.textContent), /ui_pause paused/);
  assert.equal((await sql("SELECT paused FROM awa.queue_metrics() WHERE queue = 'ui_pause'"))[0].paused, true);
  assert.equal(await page.$eval('tr[data-queue="ui_pause"] td[data-col="paused"]', (e) => e.textContent), 'paused');
  assert.match(rw.log(), /action queue\/pause \{"queue":"ui_pause"\} -> ok: Queue ui_pause paused/);
  assert.ok(!/"csrf"/.test(rw.log()), 'the audit line leaves the token out');
  assert.equal((await sql("SELECT count(*)::int AS n FROM awa.claim('ui_pause', 10)"))[0].n, 0);
  await Promise.all([page.waitForNavigation(), page.click('tr[data-queue="ui_pause"] form[action="/actions/queue/resume"] button')]);
  assert.equal((await sql("SELECT paused FROM awa.queue_metrics() WHERE queue = 'ui_pause'"))[0].paused, false);
  await page.close();
});

test('the queues screen lists a waiting claim and the keys with backlog', async () => {
  await enqueue('keyed', {}, 'ui_keys', { concurrency_key: 'tenant-<7>' });
  await enqueue('keyed', {}, 'ui_keys', { concurrency_key: 'tenant-<7>' });
  // A worker asleep in awa.claim(..., wait) on an empty queue, on a connection of its own.
  const worker = new Client({ connectionString: process.env.AWA_TEST_DATABASE_URL });
  await worker.connect();
  const pid = String((await worker.query('SELECT pg_backend_pid() AS p')).rows[0].p);
  const asleep = worker.query("SELECT * FROM awa.claim('ui_waiting', 1, wait => '60 seconds')");
  try {
    const deadline = Date.now() + WAIT.timeout; // liveness only
    for (;;) {
      assert.ok(Date.now() < deadline, 'the claim never went to sleep');
      const w = await sql("SELECT count(*)::int AS n FROM awa.waiting_claims() WHERE queue = 'ui_waiting'");
      if (w[0].n === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const page = await newPage();
    await page.goto(`${ro.base}/queues`);
    const waiting = await page.$$eval('#waiting tbody tr', (rows) => rows.map((r) => [...r.cells].slice(0, 2).map((c) => c.textContent)));
    assert.deepEqual(waiting.filter((w) => w[0] === 'ui_waiting'), [['ui_waiting', pid]]);
    const keys = await page.$$eval('#keys tbody tr', (rows) => rows.map((r) => [...r.cells].slice(0, 4).map((c) => c.textContent)));
    assert.deepEqual(keys.filter((k) => k[0] === 'ui_keys'), [['ui_keys', 'tenant-<7>', '2', '0']]);
    await page.close();
  } finally {
    await enqueue('wake', {}, 'ui_waiting');
    const got = await asleep;
    await Promise.all(got.rows.map((j) => worker.query('SELECT awa.complete($1, $2, $3)', [j.job_id, j.run_lease, j.receipt_id])));
    await worker.end();
  }
});

test('queue settings: a valid change is saved, a bad one is refused with its SQLSTATE and changes nothing', async () => {
  await enqueue('k', {}, 'ui_settings');
  const page = await newPage();
  await login(page, rw.base);
  await page.goto(`${rw.base}/queues`);
  const form = 'tr[data-queue="ui_settings"] form[action="/actions/queue/configure"]';
  await page.click('tr[data-queue="ui_settings"] details summary');
  await page.type(`${form} input[name=max_running]`, '3');
  await Promise.all([page.waitForNavigation(), page.click(`${form} button`)]);
  assert.equal((await sql("SELECT max_running FROM awa.queue_metrics() WHERE queue = 'ui_settings'"))[0].max_running, 3);
  await page.click('tr[data-queue="ui_settings"] details summary');
  await page.type(`${form} input[name=max_running]`, '5');
  await page.type(`${form} input[name=rate_limit]`, 'lots');
  await Promise.all([page.waitForNavigation(), page.click(`${form} button`)]);
  assert.match(await page.$eval('.flash.error', (e) => e.textContent), /invalid rate_limit.*22023/);
  const m = (await sql("SELECT max_running, rate_limit FROM awa.queue_metrics() WHERE queue = 'ui_settings'"))[0];
  assert.deepEqual([m.max_running, m.rate_limit], [3, null]);
  await page.close();
});

test('retrying a DLQ job in the UI makes it available; purging removes it', async () => {
  await sql("SELECT awa.configure_queue('ui_dlq', dlq_enabled => true)");
  await enqueue('d', { n: 1 }, 'ui_dlq');
  await enqueue('d', { n: 2 }, 'ui_dlq');
  const [a, b] = (await failJobs('ui_dlq', 2, 'bad')).sort();
  assert.equal(await stateOf(a), 'dlq');
  const page = await newPage();
  await login(page, rw.base);
  await page.goto(`${rw.base}/dlq?queue=ui_dlq`);
  assert.deepEqual((await page.$$eval('#dlq tbody tr', (rows) => rows.map((r) => r.getAttribute('data-job-id')))).sort(), [a, b]);
  await Promise.all([page.waitForNavigation(), page.click(`#dlq tr[data-job-id="${a}"] form[action="/actions/dlq/retry"] button`)]);
  assert.equal(await stateOf(a), 'available');
  await Promise.all([page.waitForNavigation(), page.click(`#dlq tr[data-job-id="${b}"] form[action="/actions/dlq/purge"] button`)]);
  assert.equal(await stateOf(b), null);
  assert.equal(await page.$('#dlq'), null);
  await page.close();
});

test('a bulk DLQ retry by filter retries exactly the matching jobs, with a dry-run count first', async () => {
  await sql("SELECT awa.configure_queue('ui_bulk', dlq_enabled => true)");
  for (let i = 0; i < 1200; i++) await enqueue(i % 4 === 0 ? 'other' : 'mail', { i }, 'ui_bulk');
  const failed = await failJobs('ui_bulk', 1200, 'smtp down');
  assert.equal(failed.length, 1200);
  const mail = (await sql(`SELECT job_id::text AS id FROM awa.list_jobs(queue => 'ui_bulk', state => 'dlq', kind => 'mail', max_rows => 1000)
                            UNION ALL SELECT job_id::text FROM awa.list_jobs(queue => 'ui_bulk', state => 'dlq', kind => 'mail',
                                   before_job_id => (SELECT min(job_id) FROM awa.list_jobs(queue => 'ui_bulk', state => 'dlq', kind => 'mail', max_rows => 1000)))`)).map((r) => r.id);
  assert.equal(mail.length, 900);
  const page = await newPage();
  await login(page, rw.base);
  await page.goto(`${rw.base}/dlq?queue=ui_bulk&kind=mail`);
  await Promise.all([page.waitForNavigation(), page.click('.bulk a')]);
  assert.equal(await page.$eval('#dry-run-count', (e) => e.textContent), '900 dead-lettered jobs match');
  await Promise.all([page.waitForNavigation(), page.click('.bulk form:not(.danger) button')]);
  assert.match(await page.$eval('.flash', (e) => e.textContent), /Bulk operation \d+ \(dlq_retry\) started/);
  const op = (await sql("SELECT max(op_id)::text AS op FROM awa.bulk_operations WHERE action = 'dlq_retry'"))[0].op;
  const deadline = Date.now() + WAIT.timeout; // liveness only: the UI steps it until it ends
  for (;;) {
    const s = (await sql('SELECT state, acted FROM awa.bulk_operations WHERE op_id = $1', [op]))[0];
    assert.ok(Date.now() < deadline, `bulk operation ${op} still ${s.state} after ${WAIT.timeout} ms: ${rw.log()}`);
    if (s.state !== 'running') {
      assert.deepEqual([s.state, s.acted], ['done', '900']);
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const counts = (await sql("SELECT available, dlq FROM awa.queue_counts('ui_bulk')"))[0];
  assert.deepEqual([counts.available, counts.dlq], ['900', '300']);
  for (const id of mail.slice(0, 20)) assert.equal(await stateOf(id), 'available');
  assert.equal((await sql("SELECT count(*)::int AS n FROM awa.dlq WHERE queue = 'ui_bulk' AND kind = 'mail'"))[0].n, 0);
  await page.goto(`${rw.base}/dlq`);
  assert.equal(await page.$eval(`#bulk-operations tr[data-op-id="${op}"] .op-state`, (e) => e.textContent), 'done');
  await page.close();
});

test('a bulk move by filter: a dry-run count, then every waiting match in the other queue', async () => {
  for (let i = 0; i < 30; i++) await enqueue(i < 20 ? 'mover' : 'stayer', { i }, 'ui_move_from');
  const page = await newPage();
  await login(page, rw.base);
  await page.goto(`${rw.base}/jobs?queue=ui_move_from&kind=mover`);
  await page.select('#dry-run select[name=bulk_action]', 'move');
  await page.type('#dry-run input[name=to_queue]', 'ui_move_to');
  await Promise.all([page.waitForNavigation(), page.click('#dry-run button')]);
  assert.equal(await page.$eval('#dry-run-count', (e) => e.textContent), '20 jobs to move the waiting matches to queue ui_move_to');
  await page.select('#bulk-start select[name=action]', 'move');
  await page.$eval('#bulk-start input[name=to_queue]', (e) => { e.value = ''; });
  await page.type('#bulk-start input[name=to_queue]', 'ui_move_to');
  await Promise.all([page.waitForNavigation(), page.click('#bulk-start button')]);
  assert.match(await page.$eval('.flash', (e) => e.textContent), /Bulk operation \d+ \(move\) started/);
  const op = (await sql("SELECT max(op_id)::text AS op FROM awa.bulk_operations WHERE action = 'move'"))[0].op;
  const deadline = Date.now() + WAIT.timeout; // liveness only
  for (;;) {
    const st = (await sql('SELECT state, acted FROM awa.bulk_operations WHERE op_id = $1', [op]))[0];
    assert.ok(Date.now() < deadline, `bulk move ${op} still ${st.state}`);
    if (st.state !== 'running') {
      assert.deepEqual([st.state, st.acted], ['done', '20']);
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const counts = await sql("SELECT queue, available FROM awa.queue_counts() WHERE queue LIKE 'ui_move_%' ORDER BY queue");
  assert.deepEqual(counts.map((c) => [c.queue, c.available]), [['ui_move_from', '10'], ['ui_move_to', '20']]);
  const claimed = await sql("SELECT kind FROM awa.claim('ui_move_to', 100)");
  assert.equal(claimed.length + (await sql("SELECT kind FROM awa.claim('ui_move_to', 100)")).length, 20);
  await page.close();
});

test('a failed job retried from its page is available; a waiting job gets a new priority', async () => {
  const failed = await enqueue('r', {}, 'ui_retry');
  await failJobs('ui_retry', 1, 'nope');
  assert.equal(await stateOf(failed), 'failed');
  const waiting = await enqueue('p', {}, 'ui_retry_prio');
  const page = await newPage();
  await login(page, rw.base);
  await page.goto(`${rw.base}/jobs/${failed}`);
  await Promise.all([page.waitForNavigation(), page.click('form[action="/actions/job/retry"] button')]);
  assert.equal(await stateOf(failed), 'available');
  assert.equal(await page.$eval('#job-state', (e) => e.textContent), 'available');
  await page.goto(`${rw.base}/jobs/${waiting}`);
  await page.type('form[action="/actions/job/priority"] input[name=priority]', '1');
  await Promise.all([page.waitForNavigation(), page.click('form[action="/actions/job/priority"] button')]);
  assert.equal((await sql('SELECT awa.get_job($1::bigint) ->> \'priority\' AS p', [waiting]))[0].p, '1');
  await page.close();
});

test('a filtered list shows exactly the matching jobs, page by page', async () => {
  const want = [];
  for (let i = 0; i < 130; i++) {
    const kind = i % 3 === 0 ? 'invoice' : 'receipt';
    const tags = i % 2 === 0 ? ['vip'] : [];
    const id = await enqueue(kind, { customer: i % 5 }, 'ui_list', { tags });
    if (kind === 'invoice' && i % 2 === 0) want.push(id);
  }
  await enqueue('invoice', {}, 'ui_list_other', { tags: ['vip'] });
  const page = await newPage();
  await page.goto(`${ro.base}/jobs`);
  await page.type('#filters input[name=queue]', 'ui_list');
  await page.type('#filters input[name=kind]', 'invoice');
  await page.type('#filters input[name=tag]', 'vip');
  await Promise.all([page.waitForNavigation(), page.click('#filters button')]);
  const seen = [];
  for (;;) {
    seen.push(...await page.$$eval('#jobs tbody tr', (rows) => rows.map((r) => r.getAttribute('data-job-id'))));
    const next = await page.$('#next-page');
    if (!next) break;
    await Promise.all([page.waitForNavigation(), next.click()]);
  }
  assert.deepEqual(seen, want.slice().reverse());
  // A list of exactly one page has no link to an older one; one more job makes one.
  for (let i = 0; i < 50; i++) await enqueue('fifty', {}, 'ui_fifty');
  await page.goto(`${ro.base}/jobs?queue=ui_fifty`);
  assert.equal(await page.$$eval('#jobs tbody tr', (r) => r.length), 50);
  assert.equal(await page.$('#next-page'), null);
  const first = await enqueue('fifty', {}, 'ui_fifty');
  await page.goto(`${ro.base}/jobs?queue=ui_fifty`);
  assert.equal(await page.$eval('#jobs tbody tr', (r) => r.getAttribute('data-job-id')), first);
  await Promise.all([page.waitForNavigation(), page.click('#next-page')]);
  assert.equal(await page.$$eval('#jobs tbody tr', (r) => r.length), 1);
  assert.equal(await page.$('#next-page'), null);
  await Promise.all([page.waitForNavigation(), page.click('#newest-page')]);
  assert.equal(await page.$$eval('#jobs tbody tr', (r) => r.length), 50);
  // With an args filter (an admin's): exactly the jobs whose args contain it.
  await login(page, rw.base);
  await page.goto(`${rw.base}/jobs?queue=ui_list&args_contains=${encodeURIComponent('{"customer": 3}')}`);
  const byArgs = await page.$$eval('#jobs tbody tr', (rows) => rows.map((r) => r.getAttribute('data-job-id')));
  const expected = (await sql(`SELECT job_id::text AS id FROM awa.list_jobs(queue => 'ui_list', args_contains => '{"customer": 3}', max_rows => 50)`)).map((r) => r.id);
  assert.equal(expected.length, 26);
  assert.deepEqual(byArgs, expected);
  // Bad input: a clear error, status 400.
  const r = await page.goto(`${rw.base}/jobs?args_contains=${encodeURIComponent('{oops')}`);
  assert.equal(r.status(), 400);
  assert.match(await page.$eval('.flash.error', (e) => e.textContent), /args_contains is not JSON/);
  const bad = await page.goto(`${rw.base}/jobs?state=finished`);
  assert.equal(bad.status(), 400);
  await page.close();
});

test('a job whose args, kind and error hold markup renders them as text', async () => {
  const evil = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">';
  await sql("SELECT awa.configure_queue('ui_xss', dlq_enabled => true)");
  const id = await enqueue('<b>kind</b>', { html: evil }, 'ui_xss', { tags: ['<i>t</i>'] });
  await failJobs('ui_xss', 1, evil);
  const page = await newPage();
  let dialogs = 0;
  page.on('dialog', () => { dialogs += 1; });
  await login(page, rw.base);
  for (const url of [`/jobs/${id}`, '/jobs?queue=ui_xss', '/dlq?queue=ui_xss', '/', '/queues']) {
    await page.goto(rw.base + url, { waitUntil: 'networkidle0' });
    assert.equal(await page.evaluate(() => window.__pwned), undefined, url);
    assert.equal(await page.$$eval('main script, main img, main b, main i', (e) => e.length), 0, url);
  }
  await page.goto(`${rw.base}/jobs/${id}`);
  assert.ok((await page.$eval('#job-args', (e) => e.textContent)).includes('<script>window.__pwned = 1</script>'));
  assert.ok((await page.$eval('#errors', (e) => e.textContent)).includes('<img src=x onerror='));
  assert.equal(dialogs, 0);
  await page.close();
});

test('cancelling a job from its page; logging out ends the admin session', async () => {
  const id = await enqueue('c', {}, 'ui_cancel');
  const page = await newPage();
  await login(page, rw.base);
  await page.goto(`${rw.base}/jobs/${id}`);
  await Promise.all([page.waitForNavigation(), page.click('form[action="/actions/job/cancel"] button')]);
  assert.equal(await stateOf(id), 'cancelled');
  assert.equal(await page.$eval('#job-state', (e) => e.textContent), 'cancelled');
  // A bulk cancel without a filter (every unfinished job of every queue) is refused.
  const other = await enqueue('c', {}, 'ui_cancel');
  await page.goto(`${rw.base}/jobs`);
  assert.equal(await page.$('.bulk form[action="/actions/bulk/start"]'), null);
  const csrf = await page.$eval('header input[name=csrf]', (e) => e.value);
  const ops = (await sql('SELECT count(*)::int AS n FROM awa.bulk_operations'))[0].n;
  const refused = await postFrom(page, '/actions/bulk/start', { action: 'cancel', filter: '{}', csrf, back: '/jobs' });
  assert.equal(refused.type, 'opaqueredirect'); // the 303 back to the page, which shows the refusal
  await page.goto(`${rw.base}/jobs`);
  assert.match(await page.$eval('.flash.error', (e) => e.textContent), /a bulk cancel needs a filter/);
  assert.equal((await sql('SELECT count(*)::int AS n FROM awa.bulk_operations'))[0].n, ops);
  assert.equal(await stateOf(other), 'available');
  await page.goto(`${rw.base}/jobs/${id}`);
  const token = await page.$eval('header input[name=csrf]', (e) => e.value);
  await Promise.all([page.waitForNavigation(), page.click('header form.who button')]);
  assert.equal(await page.$('.badge.admin'), null);
  const id2 = await enqueue('c', {}, 'ui_cancel');
  const r = await postFrom(page, '/actions/job/cancel', { job_id: id2, csrf: token });
  assert.equal(r.status, 403);
  assert.equal(await stateOf(id2), 'available');
  await page.close();
});

test('ten failed logins from an address in a minute refuse its next login, the right password too', async () => {
  const ui = await startUi({ AWA_UI_ADMIN_PASSWORD: PASSWORD });
  const page = await newPage();
  await page.goto(`${ui.base}/login`);
  const csrf = await page.$eval('input[name=csrf]', (e) => e.value);
  for (let i = 0; i < 10; i++) {
    assert.equal((await postFrom(page, '/login', { csrf, password: `wrong-${i}-password` })).status, 403);
  }
  const r = await postFrom(page, '/login', { csrf, password: PASSWORD });
  assert.equal(r.status, 429);
  assert.match(r.text, /Too many failed logins from this address/);
  // The UI writes the line before it answers, but its stderr reaches this
  // process through a pipe on its own turn of the event loop: wait for it
  // (bounded), as a busy machine made the line arrive after the answer (the
  // final CI of stop 42, with a CPU-heavy job beside it).
  for (const deadline = Date.now() + WAIT.timeout; !/login: throttled/.test(ui.log()) && Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.match(ui.log(), /login: throttled/);
  await page.close();
  ui.child.kill('SIGTERM');
});

test('a connection terminated in the middle of a page is a 500 for that page, and the UI goes on', async () => {
  await enqueue('k', {}, 'ui_drop');
  const page = await newPage();
  await login(page, rw.base);
  // Hold a lock the queues screen waits for (an admin's reads awa.queue_meta), so its query is in flight.
  const holder = new Client({ connectionString: process.env.AWA_TEST_DATABASE_URL });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE awa.queue_meta IN ACCESS EXCLUSIVE MODE');
    const pending = page.goto(`${rw.base}/queues`);
    const deadline = Date.now() + WAIT.timeout;
    for (;;) {
      assert.ok(Date.now() < deadline, 'the page never waited for the lock');
      const n = (await sql(`SELECT count(*)::int AS n FROM pg_stat_activity
                             WHERE application_name = 'awa-ui' AND wait_event_type = 'Lock'`))[0].n;
      if (n > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE application_name = 'awa-ui' AND wait_event_type = 'Lock'`);
    const r = await pending;
    assert.equal(r.status(), 500);
  } finally {
    await holder.end(); // its transaction, and the lock, end with it
  }
  assert.equal(rw.child.exitCode, null, `the UI process ended: ${rw.log()}`);
  const again = await page.goto(`${rw.base}/queues`);
  assert.equal(again.status(), 200);
  await page.close();
});

test('errors and args of any size are cut on the pages', async () => {
  await sql("SELECT awa.configure_queue('ui_big', dlq_enabled => true)");
  const id = await enqueue('big', { blob: 'a'.repeat(50000) }, 'ui_big');
  await failJobs('ui_big', 1, 'E'.repeat(100000));
  const page = await newPage();
  await login(page, rw.base);
  await page.goto(`${rw.base}/jobs?queue=ui_big`);
  assert.equal(await page.$eval(`#jobs tr[data-job-id="${id}"] td.error`, (e) => e.textContent), `${'E'.repeat(300)}…`);
  assert.equal((await page.$eval(`#jobs tr[data-job-id="${id}"] code.args`, (e) => e.textContent)).length, 301);
  await page.goto(`${rw.base}/jobs/${id}`);
  assert.equal(await page.$eval('#errors td.error', (e) => e.textContent), 'E'.repeat(2000));
  assert.ok((await page.content()).length < 60000);
  await page.close();
});

test('a bulk operation with a filter the list does not know is refused, not widened', async () => {
  await sql("SELECT awa.configure_queue('ui_strict', dlq_enabled => true)");
  await enqueue('s', {}, 'ui_strict');
  await failJobs('ui_strict', 1, 'x');
  const page = await newPage();
  await login(page, rw.base);
  await page.goto(`${rw.base}/dlq`);
  const csrf = await page.$eval('header input[name=csrf]', (e) => e.value);
  const ops = (await sql('SELECT count(*)::int AS n FROM awa.bulk_operations'))[0].n;
  for (const filter of ['{"queue_name": "nothing"}', '[]', '"x"', '{"queue": ""}']) {
    await postFrom(page, '/actions/bulk/start', { action: 'dlq_purge', filter, csrf, back: '/dlq' });
    await page.goto(`${rw.base}/dlq`);
    assert.match(await page.$eval('.flash.error', (e) => e.textContent), /bad filter/, filter);
  }
  assert.equal((await sql('SELECT count(*)::int AS n FROM awa.bulk_operations'))[0].n, ops);
  assert.equal((await sql("SELECT dlq FROM awa.queue_counts('ui_strict')"))[0].dlq, '1');
  await page.close();
});

test('the periodic and storage screens show what awa reports', async () => {
  await sql("SELECT awa.schedule_periodic('ui_nightly', '0 3 * * *', 'report', '{}', queue => 'ui_periodic')");
  const page = await newPage();
  await page.goto(`${ro.base}/periodic`);
  const names = await page.$$eval('#periodic tbody tr', (rows) => rows.map((r) => r.getAttribute('data-name')));
  assert.deepEqual(names, (await sql('SELECT name FROM awa.periodic_status() ORDER BY name')).map((r) => r.name));
  await page.goto(`${ro.base}/storage`);
  const rings = await page.$$eval('#rings tbody tr', (rows) => rows.map((r) => r.getAttribute('data-ring')));
  assert.deepEqual(rings, (await sql('SELECT ring FROM awa.storage_status()')).map((r) => r.ring));
  assert.match(await page.$eval('#worker', (e) => e.textContent), /Maintenance worker running \(pid \d+\)/);
  const tasks = await page.$$eval('#maintenance tbody tr', (rows) => rows.map((r) => r.getAttribute('data-task')));
  assert.deepEqual(tasks, (await sql('SELECT task FROM awa.maintenance_status() ORDER BY task')).map((r) => r.task));
  await page.close();
});
