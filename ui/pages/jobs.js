'use strict';
// Jobs: the filterable list (awa.list_jobs: a keyset page of 50 at most,
// newest first; docs/operations-ui.md has what a page costs) and, for admins,
// a dry-run count and a bulk cancel of every match (awa.bulk_count,
// awa.bulk_start). Args and metadata show only to roles that may read
// payloads (admins).
const { html, formatTime, isSqlError } = require('../lib/html');
const { page, actionForm } = require('../lib/layout');
const bulkOperations = require('./bulk_operations');

const STATES = ['available', 'running', 'scheduled', 'retryable', 'completed', 'failed', 'cancelled', 'dlq'];
const TEXT_FILTERS = ['queue', 'state', 'kind', 'tag', 'enqueued_after', 'enqueued_before'];
const JSON_FILTERS = ['args_contains', 'metadata_contains'];
const PAGE = 50;
const LIST_TEXT = 300;

// SQL for a text cut to LIST_TEXT characters, with an ellipsis when cut.
function clip(expr) {
  return `CASE WHEN length(${expr}) > ${LIST_TEXT} THEN left(${expr}, ${LIST_TEXT}) || '…' ELSE ${expr} END`;
}

class BadFilter extends Error {}

// The filters of a request, as list_jobs's named arguments (only those given).
function filtersOf(query) {
  const f = {};
  for (const k of TEXT_FILTERS) if (query[k]) f[k] = String(query[k]);
  for (const k of JSON_FILTERS) {
    if (!query[k]) continue;
    try {
      f[k] = JSON.parse(query[k]);
    } catch (err) {
      throw new BadFilter(`${k} is not JSON: ${err.message}`);
    }
    if (f[k] === null || typeof f[k] !== 'object') throw new BadFilter(`${k} must be a JSON object or array, such as {"customer_id": 42}`);
  }
  return f;
}

// SQL named arguments for the filters: "queue => $1, ...", and the values.
function namedArgs(filters, start = 1) {
  const names = [];
  const values = [];
  for (const [k, v] of Object.entries(filters)) {
    values.push(JSON_FILTERS.includes(k) ? JSON.stringify(v) : v);
    const cast = JSON_FILTERS.includes(k) ? '::jsonb' : k.startsWith('enqueued_') ? '::timestamptz' : '::text';
    names.push(`${k} => $${start + values.length - 1}${cast}`);
  }
  return { names, values };
}

function jobsQuery(filters, before, maxRows) {
  const { names, values } = namedArgs(filters);
  if (before) {
    values.push(before);
    names.push(`before_job_id => $${values.length}::bigint`);
  }
  values.push(maxRows);
  names.push(`max_rows => $${values.length}::int`);
  // Errors and args have no size limit of their own in a list: each is cut
  // to LIST_TEXT characters here, in the database, so a page stays small.
  return {
    text: `SELECT job_id, queue, kind, state, priority, attempt, max_attempts, run_at, enqueued_at, finished_at,
                  ${clip('last_error')} AS last_error, ${clip('args::text')} AS args_text
             FROM awa.list_jobs(${names.join(', ')})`,
    values,
  };
}

function queryString(filters, extra = {}) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) p.set(k, JSON_FILTERS.includes(k) ? JSON.stringify(v) : v);
  for (const [k, v] of Object.entries(extra)) if (v !== undefined && v !== null) p.set(k, v);
  return p.toString();
}

function jobRows(ctx, rows) {
  return rows.map((j) => html`<tr data-job-id="${j.job_id}">
<td class="num"><a href="/jobs/${j.job_id}">${j.job_id}</a></td>
<td>${j.queue}</td><td>${j.kind}</td><td><span class="state ${j.state}">${j.state}</span></td>
<td class="num">${j.priority}</td><td class="num">${j.attempt}/${j.max_attempts}</td>
<td class="time">${formatTime(j.enqueued_at)}</td><td class="time">${formatTime(j.run_at)}</td><td class="time">${formatTime(j.finished_at)}</td>
<td class="error">${j.last_error}</td>
${ctx.visitor.admin ? html`<td><code class="args">${j.args_text}</code></td>` : ''}
</tr>`);
}

function jobsTable(ctx, rows) {
  return html`<table id="jobs">
<thead><tr><th class="num">job</th><th>queue</th><th>kind</th><th>state</th><th class="num">priority</th>
<th class="num">attempt</th><th>enqueued</th><th>run at</th><th>finished</th><th>last error</th>${ctx.visitor.admin ? html`<th>args</th>` : ''}</tr></thead>
<tbody>${jobRows(ctx, rows)}</tbody></table>`;
}

function filterForm(ctx, query, action = '/jobs', states = STATES) {
  const v = (k) => query[k] || '';
  return html`<form method="get" action="${action}" class="filters" id="filters">
<label>queue <input name="queue" value="${v('queue')}"></label>
${states ? html`<label>state <select name="state"><option value="">any</option>${states.map((s) =>
    html`<option${v('state') === s ? html` selected` : ''}>${s}</option>`)}</select></label>` : ''}
<label>kind <input name="kind" value="${v('kind')}"></label>
<label>tag <input name="tag" value="${v('tag')}"></label>
${ctx.visitor.admin ? html`<label>args contain <input name="args_contains" value="${v('args_contains')}" placeholder='{"customer_id": 42}'></label>
<label>metadata contains <input name="metadata_contains" value="${v('metadata_contains')}" placeholder='{"source": "api"}'></label>` : ''}
<label>enqueued after <input name="enqueued_after" value="${v('enqueued_after')}" placeholder="2026-12-05 07:00Z"></label>
<label>enqueued before <input name="enqueued_before" value="${v('enqueued_before')}"></label>
<button type="submit">Filter</button> <a href="${action}">Clear</a></form>`;
}

// A page of PAGE jobs and one more, which says whether an older page exists.
async function listPage(ctx, filters, before) {
  const q = jobsQuery(filters, before, PAGE + 1);
  const r = await ctx.db.read(ctx.role, (c) => c.query(q));
  return r.rows;
}

// Links to the newest page (when this is not it) and to the next older one
// (when ctx.more says there is one).
function pager(ctx, filters, rows, base = '/jobs') {
  const newest = ctx.query.before_job_id ? html`<a id="newest-page" href="${base}?${queryString(filters)}">← Newest</a> ` : '';
  if (!ctx.more) return html`<p class="note">${newest}End of the list.</p>`;
  return html`<p>${newest}<a id="next-page" href="${base}?${queryString(filters, { before_job_id: rows[rows.length - 1].job_id })}">Older jobs →</a></p>`;
}

async function render(ctx) {
  let filters;
  let rows = [];
  let error = null;
  try {
    filters = filtersOf(ctx.query);
    const before = ctx.query.before_job_id && /^[0-9]+$/.test(ctx.query.before_job_id) ? ctx.query.before_job_id : null;
    rows = await listPage(ctx, filters, before);
    ctx.more = rows.length > PAGE;
    rows = rows.slice(0, PAGE);
  } catch (err) {
    if (!(err instanceof BadFilter) && !isSqlError(err)) throw err;
    error = err;
    ctx.status = 400;
    filters = filters || {};
  }
  const bulk = bulkChoice(ctx.query);
  const count = ctx.visitor.admin && ctx.query.count === '1' && !error ? await dryRun(ctx, bulk.action, filters, bulk) : null;
  return page(ctx, 'Jobs', html`
${filterForm(ctx, ctx.query)}
${error ? html`<p class="flash error" role="alert">${error.message}${error.hint ? html`<br><small>${error.hint}</small>` : ''}</p>` : ''}
${ctx.visitor.admin && !error ? bulkPanel(ctx, filters, bulk, count) : ''}
${rows.length ? jobsTable(ctx, rows) : html`<p class="empty">No job matches.</p>`}
${rows.length ? pager(ctx, filters, rows) : ''}
${ctx.visitor.admin ? html`<h2>Bulk operations</h2>${await bulkOperations.render(ctx)}` : ''}`);
}

// The bulk actions of the Jobs screen (the DLQ screen has dlq_retry and
// dlq_purge): which jobs each acts on, as awa.bulk_start selects them.
const BULK_ACTIONS = {
  cancel: 'cancel the unfinished matches',
  retry: 'retry the failed and cancelled matches',
  move: 'move the waiting matches to queue',
  set_priority: 'set the priority of the waiting matches to',
};

// The bulk action a request names (a dry run's GET), cancel by default.
function bulkChoice(query) {
  return {
    action: Object.prototype.hasOwnProperty.call(BULK_ACTIONS, query.bulk_action) ? query.bulk_action : 'cancel',
    to_queue: query.to_queue || '',
    to_priority: query.to_priority || '',
  };
}

function actionSelect(bulk, name = 'bulk_action') {
  return html`<select name="${name}">${Object.entries(BULK_ACTIONS).map(([a, label]) =>
    html`<option value="${a}"${bulk.action === a ? html` selected` : ''}>${label}</option>`)}</select>`;
}

// A dry run (GET: the filters and the action in the query string) and the
// start of the operation (POST, with the CSRF token), for a filtered list only.
function bulkPanel(ctx, filters, bulk, count) {
  if (Object.keys(filters).length === 0) {
    return html`<div class="bulk"><span class="note">Filter the list to act on all its matches at once.</span></div>`;
  }
  const targets = html`<input name="to_queue" value="${bulk.to_queue}" placeholder="queue (move)" size="12">
<input name="to_priority" value="${bulk.to_priority}" placeholder="priority" size="6">`;
  return html`<div class="bulk">
<form method="get" action="/jobs" id="dry-run">
${Object.entries(filters).map(([k, v]) => html`<input type="hidden" name="${k}" value="${JSON_FILTERS.includes(k) ? JSON.stringify(v) : v}">`)}
<input type="hidden" name="count" value="1">
${actionSelect(bulk)} ${targets} <button type="submit">Count (dry run)</button></form>
${count !== null ? html`<span id="dry-run-count">${count.error ? count.error : `${count.n} jobs to ${BULK_ACTIONS[bulk.action]}${
    bulk.action === 'move' ? ` ${bulk.to_queue}` : bulk.action === 'set_priority' ? ` ${bulk.to_priority}` : ''}`}</span>` : ''}
<form method="post" action="/actions/bulk/start" id="bulk-start" class="danger" data-confirm="Start this bulk operation on every match of the filter?">
<input type="hidden" name="csrf" value="${ctx.visitor.csrf}">
<input type="hidden" name="filter" value="${JSON.stringify(filters)}">
<input type="hidden" name="back" value="/jobs?${queryString(filters)}">
${actionSelect(bulk, 'action')} ${targets}
<button type="submit">Start on every match</button></form>
</div>`;
}

// awa.bulk_count for a filter (and the target of a move or a priority
// change): { n } or { error }.
async function dryRun(ctx, action, filters, bulk = {}) {
  const { names, values } = namedArgs(filters, 2);
  if (action === 'move' && bulk.to_queue) {
    values.push(bulk.to_queue);
    names.push(`to_queue => $${values.length + 1}::text`);
  }
  if (action === 'set_priority' && /^-?[0-9]{1,9}$/.test(bulk.to_priority || '')) {
    values.push(bulk.to_priority);
    names.push(`to_priority => $${values.length + 1}::int`);
  }
  try {
    const r = await ctx.db.read(ctx.role, (c) => c.query(
      `SELECT awa.bulk_count($1${names.length ? ', ' : ''}${names.join(', ')}) AS n`, [action, ...values]));
    return { n: r.rows[0].n };
  } catch (err) {
    if (!isSqlError(err)) throw err;
    return { error: err.message };
  }
}

module.exports = { render, filtersOf, namedArgs, jobsTable, filterForm, listPage, pager, queryString, dryRun, BadFilter, STATES, PAGE, TEXT_FILTERS, JSON_FILTERS };
