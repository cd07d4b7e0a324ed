'use strict';
// Overview: jobs per state and queue (awa.queue_metrics(), whose counts are
// awa.queue_counts()'s: shared-memory counters, a cost per queue, not per
// job), and throughput and pickup-latency charts from the sampler. The page's
// script refreshes both from /api/overview every two seconds.
const { html } = require('../lib/html');
const { page } = require('../lib/layout');

const STATES = ['available', 'running', 'scheduled', 'retryable', 'completed', 'failed', 'cancelled', 'dlq'];

async function data(ctx) {
  const r = await ctx.db.read(ctx.role, (c) => c.query(
    `SELECT queue, ${STATES.join(', ')}, oldest_available_age_seconds, waiting_claims, paused
       FROM awa.queue_metrics() ORDER BY queue`));
  const totals = Object.fromEntries(STATES.map((s) => [s, 0]));
  const queues = r.rows.map((row) => {
    const q = { queue: row.queue, paused: row.paused, waiting: Number(row.waiting_claims),
      oldestAge: Number(row.oldest_available_age_seconds) };
    for (const s of STATES) {
      q[s] = Number(row[s]);
      totals[s] += q[s];
    }
    return q;
  });
  return { states: STATES, totals, queues, series: ctx.sampler.series(),
    sampleSeconds: ctx.sampler.sampleSeconds, sampleError: ctx.sampler.lastError };
}

function countsTable(d) {
  return html`<table id="counts">
<thead><tr><th>queue</th>${d.states.map((s) => html`<th class="num">${s}</th>`)}</tr></thead>
<tbody>${d.queues.map((q) => html`<tr data-queue="${q.queue}"><td><a href="/jobs?queue=${encodeURIComponent(q.queue)}">${q.queue}</a>${
    q.paused ? html` <span class="badge paused">paused</span>` : ''}</td>${d.states.map((s) =>
    html`<td class="num" data-state="${s}">${q[s]}</td>`)}</tr>`)}</tbody>
<tfoot><tr data-queue=""><th>all queues</th>${d.states.map((s) => html`<td class="num" data-state="${s}">${d.totals[s]}</td>`)}</tr></tfoot>
</table>`;
}

async function render(ctx) {
  const d = await data(ctx);
  return page(ctx, 'Overview', html`
<section class="tiles">${d.states.map((s) => html`<div class="tile ${s}"><span class="label">${s}</span><span class="value" data-total="${s}">${d.totals[s]}</span></div>`)}</section>
<section class="charts">
  <figure><figcaption>Throughput (jobs/s, every ${d.sampleSeconds} s)</figcaption><div class="chart" id="throughput-chart" data-series="enqueued completed failed retried"></div></figure>
  <figure><figcaption>Pickup latency: the oldest available job's age (without a concurrency key), the longest over queues not paused (s)</figcaption><div class="chart" id="latency-chart" data-series="oldestAge"></div></figure>
</section>
<h2>Jobs per queue and state</h2>
${d.queues.length ? countsTable(d) : html`<p class="empty">No queue yet: enqueue a job (awa.enqueue) and it appears here.</p>`}
<p class="note">Counts from awa.queue_metrics() (the counters of awa.queue_counts()); refreshed every 2 s.
<span id="refreshed"></span></p>`);
}

module.exports = { render, data };
