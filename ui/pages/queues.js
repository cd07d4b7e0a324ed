'use strict';
// Queues: depth, the oldest available job's age, waiting claims and limits
// (awa.queue_metrics(): counters and lane heads in shared memory, a cost per
// queue); pause and resume; settings (awa.configure_queue) for admins, who
// also see every setting (awa.queue_meta); the busiest concurrency keys
// (awa.key_metrics) and the claims waiting for work (awa.waiting_claims).
const { html, formatAge, formatTime } = require('../lib/html');
const { page, actionForm } = require('../lib/layout');

async function render(ctx) {
  const { metrics, meta, keys, waiting } = await ctx.db.read(ctx.role, async (c) => {
    const m = await c.query(`SELECT * FROM awa.queue_metrics() ORDER BY queue`);
    const k = await c.query(`SELECT * FROM awa.key_metrics(NULL, 5)`);
    const w = await c.query(`SELECT pid, queue, waiting_since FROM awa.waiting_claims() ORDER BY queue, waiting_since`);
    let settings = new Map();
    if (ctx.visitor.admin) {
      const s = await c.query(
        `SELECT queue, dlq_enabled, aging_interval::text AS aging_interval,
                default_deadline::text AS default_deadline, fairness, key_max_running,
                CASE WHEN key_rate_count IS NULL THEN NULL
                     ELSE key_rate_count || ' per ' || key_rate_period END AS key_rate_limit,
                key_rate_burst
           FROM awa.queue_meta`);
      settings = new Map(s.rows.map((r) => [r.queue, r]));
    }
    return { metrics: m.rows, meta: settings, keys: k.rows, waiting: w.rows };
  });
  const rows = metrics.map((q) => {
    const s = meta.get(q.queue);
    return html`<tr data-queue="${q.queue}">
<td><a href="/jobs?queue=${encodeURIComponent(q.queue)}">${q.queue}</a></td>
<td class="num" data-col="available">${q.available}</td>
<td class="num">${q.running}</td>
<td class="num">${q.scheduled}</td>
<td class="num">${q.retryable}</td>
<td class="num" title="${q.oldest_available_at || ''}">${Number(q.available) > 0 ? formatAge(q.oldest_available_age_seconds) : '–'}</td>
<td class="num">${q.waiting_claims}</td>
<td data-col="paused">${q.paused ? html`<span class="badge paused">paused</span>` : 'active'}</td>
<td>${q.max_running === null ? '–' : q.max_running}</td>
<td>${q.rate_limit === null ? '–' : html`${q.rate_limit}${q.burst ? `, burst ${q.burst}` : ''}`}</td>
<td class="num">${q.claims_limited} / ${q.claims_rate_limited}</td>
<td>${ctx.visitor.admin ? html`${q.paused
    ? actionForm(ctx, '/actions/queue/resume', { queue: q.queue, back: '/queues' }, 'Resume')
    : actionForm(ctx, '/actions/queue/pause', { queue: q.queue, back: '/queues' }, 'Pause')}
<details class="settings"><summary>Settings</summary>${settingsForm(ctx, q, s)}</details>` : ''}</td>
</tr>`;
  });
  return page(ctx, 'Queues', html`
${metrics.length === 0 ? html`<p class="empty">No queue yet.</p>` : html`<table id="queues">
<thead><tr><th>queue</th><th class="num">available</th><th class="num">running</th><th class="num">scheduled</th>
<th class="num">retryable</th><th class="num">oldest available</th><th class="num">waiting claims</th><th>state</th>
<th>max running</th><th>rate limit</th><th class="num" title="claims given fewer jobs by the concurrency / rate limit since the server started">limited</th><th></th></tr></thead>
<tbody>${rows}</tbody></table>`}
${ctx.visitor.admin || !ctx.auth.enabled ? '' : html`<p class="note">Log in to pause, resume and change settings.</p>`}
<h2>Concurrency keys</h2>
${keys.length === 0 ? html`<p class="empty">No job with a concurrency key is waiting or running.</p>` : html`<table id="keys">
<thead><tr><th>queue</th><th>key</th><th class="num">backlog</th><th class="num">running</th><th>max running per key</th>
<th>rate per key</th><th class="num">limited</th></tr></thead>
<tbody>${keys.map((k) => html`<tr><td>${k.queue}</td><td>${k.concurrency_key}</td><td class="num">${k.backlog}</td>
<td class="num">${k.running}</td><td>${k.key_max_running === null ? '–' : k.key_max_running}</td>
<td>${k.key_rate_limit === null ? '–' : html`${k.key_rate_limit}${k.key_burst ? `, burst ${k.key_burst}` : ''}`}</td>
<td class="num">${k.claims_limited} / ${k.claims_rate_limited}</td></tr>`)}</tbody></table>
<p class="note">Per queue, the 5 keys with the most backlog and the 5 with the most running attempts (awa.key_metrics).</p>`}
<h2>Workers waiting for work</h2>
${waiting.length === 0 ? html`<p class="empty">No claim is waiting (awa.claim with wait) right now.</p>` : html`<table id="waiting">
<thead><tr><th>queue</th><th class="num">backend pid</th><th>waiting since</th></tr></thead>
<tbody>${waiting.map((w) => html`<tr><td>${w.queue}</td><td class="num">${w.pid}</td><td class="time">${formatTime(w.waiting_since)}</td></tr>`)}</tbody></table>`}`);
}

function settingsForm(ctx, q, s) {
  s = s || {};
  const field = (name, label, value, hint) => html`<label>${label}
<input name="${name}" value="" placeholder="${value === null || value === undefined ? 'unset' : value}" title="${hint}"></label>`;
  return html`<form method="post" action="/actions/queue/configure" class="settings">
<input type="hidden" name="csrf" value="${ctx.visitor.csrf}">
<input type="hidden" name="queue" value="${q.queue}">
<input type="hidden" name="back" value="/queues">
<p class="note">An empty field leaves the setting as it is.</p>
<label>dlq_enabled <select name="dlq_enabled"><option value="">(${s.dlq_enabled ? 'true' : 'false'})</option>
<option value="true">true</option><option value="false">false</option></select></label>
${field('max_running', 'max_running', q.max_running, '0 removes the limit')}
${field('rate_limit', 'rate_limit', q.rate_limit, "such as '100 per 1 second', or 'none'")}
${field('burst', 'burst', q.burst, 'attempts at once before the rate applies')}
${field('aging_interval', 'aging_interval', s.aging_interval, '0 for strict priorities')}
${field('default_deadline', 'default_deadline', s.default_deadline, 'such as 5 minutes')}
<label>fairness <select name="fairness"><option value="">(${s.fairness || 'none'})</option>
<option value="none">none</option><option value="key">key</option></select></label>
${field('key_max_running', 'key_max_running', s.key_max_running, '0 removes the limit')}
${field('key_rate_limit', 'key_rate_limit', s.key_rate_limit, "such as '10 per 1 second', or 'none'")}
${field('key_burst', 'key_burst', s.key_rate_burst, 'attempts of one key at once')}
<button type="submit">Save settings</button></form>`;
}

module.exports = { render };
