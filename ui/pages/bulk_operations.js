'use strict';
// The last 20 bulk operations (awa.bulk_operations, which awa_admin may read),
// with their progress, and Resume / Stop for the running ones. Shown to
// admins on the Jobs and DLQ screens.
const { html, formatTime } = require('../lib/html');
const { actionForm } = require('../lib/layout');

async function render(ctx) {
  const r = await ctx.db.read(ctx.role, (c) => c.query(
    `SELECT op_id, action, filter, state, acted, passed, steps, created_at, finished_at
       FROM awa.bulk_operations ORDER BY op_id DESC LIMIT 20`));
  if (r.rows.length === 0) return html`<p class="empty">No bulk operation yet.</p>`;
  return html`<table id="bulk-operations"><thead><tr><th class="num">op</th><th>action</th><th>filter</th><th>state</th>
<th class="num">acted</th><th class="num">passed</th><th class="num">steps</th><th>started</th><th>finished</th><th></th></tr></thead>
<tbody>${r.rows.map((o) => html`<tr data-op-id="${o.op_id}"><td class="num">${o.op_id}</td><td>${o.action}</td>
<td><code>${JSON.stringify(o.filter)}</code></td><td class="op-state">${o.state}${ctx.bulk.isRunning(o.op_id) ? ' (stepping)' : ''}</td>
<td class="num">${o.acted}</td><td class="num">${o.passed}</td><td class="num">${o.steps}</td>
<td>${formatTime(o.created_at)}</td><td>${formatTime(o.finished_at)}</td>
<td>${o.state === 'running' ? html`${ctx.bulk.isRunning(o.op_id) ? '' : actionForm(ctx, '/actions/bulk/resume', { op_id: o.op_id, back: ctx.url }, 'Resume')}
${actionForm(ctx, '/actions/bulk/cancel', { op_id: o.op_id, back: ctx.url }, 'Stop')}` : ''}</td></tr>`)}</tbody></table>`;
}

module.exports = { render };
