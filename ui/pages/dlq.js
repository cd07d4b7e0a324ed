'use strict';
// DLQ: dead-lettered jobs (awa.list_jobs with state 'dlq', read from the DLQ
// table along its job_id index), each retried or purged by an admin
// (awa.dlq_retry, awa.dlq_purge), or every match at once by a bulk operation
// (awa.bulk_start, stepped by the UI: lib/bulk_runner.js), whose progress
// (awa.bulk_operations) shows below (pages/bulk_operations.js).
const { html, formatTime, isSqlError } = require('../lib/html');
const { page, actionForm } = require('../lib/layout');
const jobs = require('./jobs');
const bulkOperations = require('./bulk_operations');

function rows(ctx, list) {
  return list.map((j) => html`<tr data-job-id="${j.job_id}">
<td class="num"><a href="/jobs/${j.job_id}">${j.job_id}</a></td><td>${j.queue}</td><td>${j.kind}</td>
<td class="num">${j.attempt}/${j.max_attempts}</td><td>${formatTime(j.finished_at)}</td><td class="error">${j.last_error}</td>
${ctx.visitor.admin ? html`<td><code class="args">${j.args_text}</code></td>
<td>${actionForm(ctx, '/actions/dlq/retry', { job_id: j.job_id, back: ctx.url }, 'Retry')}
${actionForm(ctx, '/actions/dlq/purge', { job_id: j.job_id, back: ctx.url }, 'Purge', { danger: true, confirm: `Purge job ${j.job_id}?` })}</td>` : ''}
</tr>`);
}

async function render(ctx) {
  let filters;
  let list = [];
  let error = null;
  const query = { ...ctx.query, state: 'dlq' };
  try {
    filters = jobs.filtersOf(query);
    const before = ctx.query.before_job_id && /^[0-9]+$/.test(ctx.query.before_job_id) ? ctx.query.before_job_id : null;
    list = await jobs.listPage(ctx, filters, before);
    ctx.more = list.length > jobs.PAGE;
    list = list.slice(0, jobs.PAGE);
  } catch (err) {
    if (!(err instanceof jobs.BadFilter) && !isSqlError(err)) throw err;
    error = err;
    ctx.status = 400;
    filters = { state: 'dlq' };
  }
  const admin = ctx.visitor.admin;
  const count = admin && ctx.query.count === '1' && !error ? await jobs.dryRun(ctx, 'dlq_retry', filters) : null;
  const back = `/dlq?${jobs.queryString(filters)}`;
  return page(ctx, 'Dead-letter queue', html`
${jobs.filterForm(ctx, query, '/dlq', null)}
${error ? html`<p class="flash error" role="alert">${error.message}${error.hint ? html`<br><small>${error.hint}</small>` : ''}</p>` : ''}
${admin && !error ? html`<div class="bulk">
<a href="/dlq?${jobs.queryString(filters, { count: '1' })}">Count matches (dry run)</a>
${count !== null ? html`<span id="dry-run-count">${count.error ? count.error : `${count.n} dead-lettered jobs match`}</span>` : ''}
${actionForm(ctx, '/actions/bulk/start', { action: 'dlq_retry', filter: JSON.stringify(filters), back }, 'Retry every match',
    { confirm: 'Retry every dead-lettered job that matches this filter?' })}
${actionForm(ctx, '/actions/bulk/start', { action: 'dlq_purge', filter: JSON.stringify(filters), back }, 'Purge every match',
    { danger: true, confirm: 'Purge every dead-lettered job that matches this filter? This cannot be undone.' })}
</div>` : ''}
${list.length ? html`<table id="dlq"><thead><tr><th class="num">job</th><th>queue</th><th>kind</th><th class="num">attempt</th>
<th>dead-lettered</th><th>reason</th>${admin ? html`<th>args</th><th></th>` : ''}</tr></thead><tbody>${rows(ctx, list)}</tbody></table>
${jobs.pager(ctx, filters, list, '/dlq')}` : html`<p class="empty">The DLQ is empty${Object.keys(filters).length > 1 ? ' for this filter' : ''}.</p>`}
${admin ? html`<h2>Bulk operations</h2>${await bulkOperations.render(ctx)}` : ctx.auth.enabled ? html`<p class="note">Log in to retry and purge.</p>` : ''}`);
}

module.exports = { render };
