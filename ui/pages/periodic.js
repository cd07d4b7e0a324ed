'use strict';
// Periodic schedules: next and last run, last job, last error
// (awa.periodic_status(): one row per schedule, without args and opts).
const { html, formatTime } = require('../lib/html');
const { page } = require('../lib/layout');

async function render(ctx) {
  // The last error cut to 500 characters in the database (it has no limit of its own).
  const r = await ctx.db.read(ctx.role, (c) => c.query(
    `SELECT name, schedule, timezone, kind, queue, next_run_at, last_run_at, last_job_id,
            CASE WHEN length(last_error) > 500 THEN left(last_error, 500) || '…' ELSE last_error END AS last_error
       FROM awa.periodic_status() ORDER BY name`));
  return page(ctx, 'Periodic schedules', r.rows.length === 0
    ? html`<p class="empty">No periodic job: create one with awa.schedule_periodic (docs/periodic.md).</p>`
    : html`<table id="periodic"><thead><tr><th>name</th><th>schedule</th><th>time zone</th><th>kind</th><th>queue</th>
<th>next run</th><th>last run</th><th class="num">last job</th><th>last error</th></tr></thead>
<tbody>${r.rows.map((p) => html`<tr data-name="${p.name}"><td>${p.name}</td><td><code>${p.schedule}</code></td><td>${p.timezone}</td>
<td>${p.kind}</td><td>${p.queue}</td><td>${formatTime(p.next_run_at)}</td><td>${formatTime(p.last_run_at)}</td>
<td class="num">${p.last_job_id === null ? '' : html`<a href="/jobs/${p.last_job_id}">${p.last_job_id}</a>`}</td>
<td class="error">${p.last_error}</td></tr>`)}</tbody></table>`);
}

module.exports = { render };
