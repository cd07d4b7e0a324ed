#!/usr/bin/env node
// bench/peers/pgboss/driver.js: pg-boss as a peer in bench/peers (run.sh, system `pgboss`),
// driven only through pg-boss's own API (the pinned version in package.json).
//
//   node driver.js install --db DB
//       boss.start() (pg-boss creates and migrates its schema `pgboss`), then stop.
//   node driver.js preload --db DB --queue Q --jobs N [--policy standard|singleton] [--keys K]
//       boss.createQueue(Q, { policy }), then N jobs with boss.insert() in calls of 1,000 jobs
//       (the 80-byte payload of every peer). --keys 0: no singleton key; K > 0: job i gets the
//       singletonKey "k<i mod K>"; K = -1: every job its own key.
//   node driver.js drain --db DB --queue Q --workers N --batch B --seconds T [--idle-ms MS]
//       N workers in one Node process (a pg pool of N + 2 connections), each looping for T s:
//       boss.fetch(Q, { batchSize: B }) (claim: one statement, its own transaction), then
//       boss.complete(Q, ids) (one statement, its own transaction); after a fetch that returned
//       nothing, a pause of MS ms (run.sh's IDLE_MS, as the pgbench workers of the other systems).
//       Prints pgbench-style lines that run.sh reads (tps, latency average, transactions,
//       statement latencies, per-second progress). Exit status 1 if pg-boss reported an error.
//
// Connection: PGHOST (the socket directory), PGPORT and PGUSER from the environment, as psql.
// Why fetch()/complete() and not work(): in pg-boss 10, a work() worker waits out its polling
// interval (at least 0.5 s) after every fetch that took less than that, jobs or not (src/worker.js),
// so N work() workers fetch at most 2N times a second; a drain with them measures the interval.
// Users who want throughput call fetch() and complete() themselves, as here.
'use strict'

const PgBoss = require('pg-boss')

const PAYLOAD = { task: 'send_email', user_id: 12345, template: 'welcome', attempt_limit: 25 }

function args () {
  const a = { cmd: process.argv[2] }
  for (let i = 3; i < process.argv.length; i += 2) {
    const k = process.argv[i]
    if (!k.startsWith('--') || i + 1 >= process.argv.length) usage(`bad argument '${k}'`)
    a[k.slice(2)] = process.argv[i + 1]
  }
  return a
}

function usage (msg) {
  console.error(`driver.js: ${msg}\nusage: driver.js install|preload|drain --db DB ... (see the head of driver.js)`)
  process.exit(2)
}

function int (a, k, dflt) {
  const v = a[k] === undefined ? dflt : Number(a[k])
  if (!Number.isInteger(v)) usage(`--${k} must be an integer (got '${a[k]}')`)
  return v
}

function boss (db, max, extra = {}) {
  const b = new PgBoss({
    host: process.env.PGHOST,
    port: Number(process.env.PGPORT || 5432),
    user: process.env.PGUSER || 'postgres',
    database: db,
    max,
    ...extra
  })
  return b
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

async function install (a) {
  // install only: no maintenance or cron in the template database
  const b = boss(a.db, 2, { supervise: false, schedule: false })
  b.on('error', e => { console.error(e); process.exitCode = 1 })
  await b.start()
  await b.stop({ graceful: false, wait: true })
}

async function preload (a) {
  const jobs = int(a, 'jobs')
  const keys = int(a, 'keys', 0)
  const policy = a.policy || 'standard'
  const b = boss(a.db, 2, { supervise: false, schedule: false })
  b.on('error', e => { console.error(e); process.exitCode = 1 })
  await b.start()
  await b.createQueue(a.queue, { name: a.queue, policy })
  for (let i = 0; i < jobs; i += 1000) {
    const batch = []
    for (let j = i; j < Math.min(jobs, i + 1000); j++) {
      const job = { name: a.queue, data: PAYLOAD }
      if (keys > 0) job.singletonKey = `k${j % keys}`
      else if (keys === -1) job.singletonKey = `k${j}`
      batch.push(job)
    }
    await b.insert(batch)
  }
  await b.stop({ graceful: false, wait: true })
}

async function drain (a) {
  const n = int(a, 'workers')
  const bsz = int(a, 'batch')
  const secs = int(a, 'seconds')
  const idle = int(a, 'idle-ms', 10)
  if (n < 1 || bsz < 1 || secs < 1) usage('--workers, --batch and --seconds must be at least 1')
  // pg-boss's defaults otherwise (its supervision and cron timers run as they do for its users)
  const b = boss(a.db, n + 2)
  let errors = 0
  b.on('error', e => { errors++; if (errors <= 5) console.error(`pg-boss error: ${e.message}`) })
  await b.start()

  let loops = 0; let jobs = 0; let empty = 0; let loopNs = 0n; let fetchNs = 0n; let completeNs = 0n; let completes = 0
  const per = [] // per second: [loops, loopNs]
  const t0 = process.hrtime.bigint()
  const end = t0 + BigInt(secs) * 1000000000n
  async function worker () {
    while (process.hrtime.bigint() < end) {
      const s = process.hrtime.bigint()
      const got = await b.fetch(a.queue, { batchSize: bsz })
      const f = process.hrtime.bigint()
      fetchNs += f - s
      if (got.length > 0) {
        await b.complete(a.queue, got.map(j => j.id))
        completeNs += process.hrtime.bigint() - f
        completes++
        jobs += got.length
      } else {
        empty++
        await sleep(idle)
      }
      const e = process.hrtime.bigint()
      loops++
      loopNs += e - s
      const sec = Number((e - t0) / 1000000000n)
      while (per.length <= sec) per.push([0, 0n])
      per[sec][0]++
      per[sec][1] += e - s
    }
  }
  const ws = []
  for (let i = 0; i < n; i++) ws.push(worker())
  await Promise.all(ws)
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9
  await b.stop({ graceful: false, wait: true })

  const ms = ns => Number(ns) / 1e6
  per.forEach(([l, ns], i) => {
    if (i < secs) console.log(`progress: ${i + 1}.0 s, ${l.toFixed(1)} tps, lat ${(l ? ms(ns) / l : 0).toFixed(3)} ms stddev 0.000, 0 failed`)
  })
  console.log(`pg-boss ${require('pg-boss/package.json').version}, ${n} workers, batch ${bsz}, ${secs} s`)
  console.log(`jobs completed by this driver: ${jobs}`)
  console.log(`empty fetches: ${empty}`)
  console.log(`pg-boss errors: ${errors}`)
  console.log(`number of transactions actually processed: ${loops}`)
  console.log(`latency average = ${(loops ? ms(loopNs) / loops : 0).toFixed(3)} ms`)
  console.log(`tps = ${(loops / elapsed).toFixed(6)} (without initial connection time)`)
  console.log('statement latencies in milliseconds and failures:')
  console.log(`  ${(loops ? ms(fetchNs) / loops : 0).toFixed(3)}  0  boss.fetch(queue, { batchSize })`)
  console.log(`  ${(completes ? ms(completeNs) / completes : 0).toFixed(3)}  0  boss.complete(queue, ids)`)
  if (errors > 0) process.exitCode = 1
}

const a = args()
if (!a.db) usage('--db is required')
const cmds = { install, preload, drain }
if (!cmds[a.cmd]) usage(`unknown command '${a.cmd}'`)
if (a.cmd !== 'install' && !a.queue) usage('--queue is required')
cmds[a.cmd](a).catch(e => { console.error(e); process.exit(1) })
