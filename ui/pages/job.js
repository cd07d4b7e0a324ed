'use strict';
// One job. Admins read its document (awa.get_job: args, metadata, progress,
// errors per attempt, its timeline); a read-only visitor sees its row of
// awa.list_jobs (awa_monitor may not call get_job: the document holds args).
const { html, formatTime } = require('../lib/html');
const { page, actionForm } = require('../lib/layout');

const UNFINISHED = new Set(['available', 'running', 'scheduled', 'retryable']);
const DOC_TEXT = 20000; // characters of args, metadata and progress shown
const ERROR_TEXT = 2000; // characters of each error shown

// The job's document, its large parts pretty-printed and cut in the database
// (an error or a progress has no size limit of its own).
const DOCUMENT_SQL = `
WITH j AS (SELECT awa.get_job($1::bigint) AS d)
SELECT d - 'args' - 'metadata' - 'progress' - 'errors' - 'dlq_reason' AS doc,
       left(jsonb_pretty(d -> 'args'), ${DOC_TEXT}) AS args,
       left(jsonb_pretty(d -> 'metadata'), ${DOC_TEXT}) AS metadata,
       left(jsonb_pretty(d -> 'progress'), ${DOC_TEXT}) AS progress,
       left(d ->> 'dlq_reason', ${ERROR_TEXT}) AS dlq_reason,
       (SELECT jsonb_agg(jsonb_build_object('attempt', e -> 'attempt', 'at', e -> 'at',
                                            'error', left(e ->> 'error', ${ERROR_TEXT})) ORDER BY n)
          FROM jsonb_array_elements(d -> 'errors') WITH ORDINALITY x(e, n)) AS errors
  FROM j WHERE d IS NOT NULL`;

function field(label, value) {
  return html`<tr><th>${label}</th><td>${value}</td></tr>`;
}

// A row only when there is something to show (a finished job has no deadline).
function optional(label, value) {
  return value === null || value === undefined || value === '' ? '' : field(label, value);
}

function timeline(doc) {
  const events = [{ at: doc.created_at, what: 'enqueued' }];
  for (const e of doc.errors || []) events.push({ at: e.at, what: `attempt ${e.attempt} ended`, error: e.error });
  if (doc.attempted_at) events.push({ at: doc.attempted_at, what: `attempt ${doc.attempt} claimed` });
  if (doc.heartbeat_at) events.push({ at: doc.heartbeat_at, what: 'last heartbeat' });
  if (doc.finalized_at) events.push({ at: doc.finalized_at, what: doc.state === 'dlq' ? 'dead-lettered' : doc.state });
  events.sort((a, b) => new Date(a.at) - new Date(b.at));
  return html`<table id="timeline"><thead><tr><th>at</th><th>event</th><th>error</th></tr></thead><tbody>${events.map((e) =>
    html`<tr><td>${formatTime(e.at)}</td><td>${e.what}</td><td class="error">${e.error}</td></tr>`)}</tbody></table>`;
}

// A form that posts one value with the job: a queue to move to, a priority.
function targetForm(ctx, action, jobId, back, name, placeholder, label) {
  return html`<form method="post" action="${action}" class="inline target">
<input type="hidden" name="csrf" value="${ctx.visitor.csrf}">
<input type="hidden" name="job_id" value="${jobId}"><input type="hidden" name="back" value="${back}">
<input name="${name}" placeholder="${placeholder}" required size="12"> <button type="submit">${label}</button></form>`;
}

function actions(ctx, doc) {
  if (!ctx.visitor.admin) return '';
  const back = `/jobs/${doc.job_id}`;
  if (UNFINISHED.has(doc.state)) {
    const cancel = actionForm(ctx, '/actions/job/cancel', { job_id: doc.job_id, back }, 'Cancel job',
      { danger: true, confirm: `Cancel job ${doc.job_id}?` });
    if (doc.state === 'running') return cancel;
    return html`${cancel}
${targetForm(ctx, '/actions/job/move', doc.job_id, back, 'queue', 'another queue', 'Move')}
${targetForm(ctx, '/actions/job/priority', doc.job_id, back, 'priority', String(doc.priority), 'Set priority')}`;
  }
  if (doc.state === 'failed' || doc.state === 'cancelled') {
    return actionForm(ctx, '/actions/job/retry', { job_id: doc.job_id, back }, 'Retry job');
  }
  if (doc.state === 'dlq') {
    return html`${actionForm(ctx, '/actions/dlq/retry', { job_id: doc.job_id, back }, 'Retry from DLQ')}
${actionForm(ctx, '/actions/dlq/purge', { job_id: doc.job_id, back: '/dlq' }, 'Purge from DLQ', { danger: true, confirm: `Purge job ${doc.job_id}?` })}`;
  }
  return '';
}

async function render(ctx) {
  const id = ctx.params.id;
  if (ctx.visitor.admin) {
    const r = await ctx.db.read(ctx.role, (c) => c.query(DOCUMENT_SQL, [id]));
    const doc = r.rows[0] && r.rows[0].doc;
    if (!doc) return notFound(ctx, id);
    Object.assign(doc, { args: r.rows[0].args, metadata: r.rows[0].metadata, progress: r.rows[0].progress,
      errors: r.rows[0].errors || [], dlq_reason: r.rows[0].dlq_reason });
    return page(ctx, `Job ${doc.job_id}`, html`
<div class="actions">${actions(ctx, doc)}</div>
<table class="fields" id="job">
${field('state', html`<span class="state ${doc.state}" id="job-state">${doc.state}</span>`)}
${field('queue', html`<a href="/jobs?queue=${encodeURIComponent(doc.queue)}">${doc.queue}</a>`)}
${field('kind', doc.kind)}
${field('priority', doc.priority)}
${field('attempt', `${doc.attempt} of ${doc.max_attempts} (run lease ${doc.run_lease})`)}
${field('run at', formatTime(doc.run_at))}
${field('enqueued', formatTime(doc.created_at))}
${optional('claimed', formatTime(doc.attempted_at))}
${optional('deadline', formatTime(doc.deadline_at))}
${optional('last heartbeat', formatTime(doc.heartbeat_at))}
${optional('finished', formatTime(doc.finalized_at))}
${optional('tags', (doc.tags || []).join(', '))}
${doc.dlq_reason ? field('DLQ reason', doc.dlq_reason) : ''}
</table>
<h2>Args</h2><pre id="job-args">${doc.args}</pre>
<h2>Metadata</h2><pre>${doc.metadata}</pre>
<h2>Progress</h2><pre>${doc.progress === null || doc.progress === 'null' ? 'none' : doc.progress}</pre>
<h2>Errors per attempt</h2>
${(doc.errors || []).length ? html`<table id="errors"><thead><tr><th class="num">attempt</th><th>at</th><th>error</th></tr></thead><tbody>${
    doc.errors.map((e) => html`<tr><td class="num">${e.attempt}</td><td>${formatTime(e.at)}</td><td class="error">${e.error}</td></tr>`)}</tbody></table>`
    : html`<p class="empty">No error.</p>`}
<h2>History</h2>${timeline(doc)}`);
  }
  const r = await ctx.db.read(ctx.role, (c) => c.query(
    `SELECT job_id, queue, kind, state, priority, attempt, max_attempts, run_at, enqueued_at, finished_at,
            left(last_error, ${ERROR_TEXT}) AS last_error
       FROM awa.list_jobs(before_job_id => $1::bigint + 1, max_rows => 1)`, [id]));
  const j = r.rows[0];
  if (!j || String(j.job_id) !== String(id)) return notFound(ctx, id);
  return page(ctx, `Job ${j.job_id}`, html`
<table class="fields" id="job">
${field('state', html`<span class="state ${j.state}" id="job-state">${j.state}</span>`)}
${field('queue', j.queue)}${field('kind', j.kind)}${field('priority', j.priority)}
${field('attempt', `${j.attempt} of ${j.max_attempts}`)}
${field('run at', formatTime(j.run_at))}${field('enqueued', formatTime(j.enqueued_at))}
${optional('finished', formatTime(j.finished_at))}${optional('last error', j.last_error)}
</table>
<p class="note">Args, metadata, progress and the errors of every attempt are shown to admins (they may hold personal data${
    ctx.auth.enabled ? html`; <a href="/login">log in</a>` : ''}).</p>`);
}

function notFound(ctx, id) {
  ctx.status = 404;
  return page(ctx, `Job ${id}`, html`<p class="empty">No job ${id}: never enqueued, purged from the DLQ, or finished longer ago than awa.history_retention.</p>`);
}

module.exports = { render };
