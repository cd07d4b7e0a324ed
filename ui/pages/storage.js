'use strict';
// Storage and maintenance health: each ring's position, generation, slots in
// use and held, last rotate and prune outcomes and dead tuples
// (awa.storage_status()), and each maintenance step's last outcome, runs and
// errors (awa.maintenance_status()). Both read shared memory, the ring
// ledgers and the statistics system: a cost per ring, not per job.
const { html, formatTime } = require('../lib/html');
const { page } = require('../lib/layout');

// Dead tuples of a ring's tables: their sum, and each table that has some.
function deadTuples(byTable) {
  const entries = Object.entries(byTable || {});
  const some = entries.filter(([, n]) => Number(n) > 0);
  const total = entries.reduce((s, [, n]) => s + Number(n), 0);
  return html`<span class="dead${total > 0 ? ' some' : ''}" data-dead="${total}" title="${entries.map(([t, n]) => `${t}: ${n}`).join(', ')}">${total}</span>${
    some.map(([t, n]) => html` <small>${t}: ${n}</small>`)}`;
}

async function render(ctx) {
  const { rings, tasks } = await ctx.db.read(ctx.role, async (c) => ({
    rings: (await c.query('SELECT * FROM awa.storage_status()')).rows,
    tasks: (await c.query('SELECT * FROM awa.maintenance_status() ORDER BY task')).rows,
  }));
  const worker = tasks.find((t) => t.worker_pid !== null);
  return page(ctx, 'Storage and maintenance', html`
<p id="worker">${worker ? html`Maintenance worker running (pid ${worker.worker_pid}).`
    : html`<span class="badge paused">No maintenance worker runs for this database</span> (is awa in shared_preload_libraries?).`}</p>
<h2>Rings</h2>
<table id="rings"><thead><tr><th>ring</th><th class="num">slot</th><th class="num">generation</th><th class="num">oldest live</th>
<th class="num">slots in use / cap</th><th>held slots</th><th>last rotated</th><th>last rotate</th><th>last prune</th>
<th class="num">prune back-off</th><th>dead tuples</th></tr></thead>
<tbody>${rings.map((r) => html`<tr data-ring="${r.ring}"><td>${r.ring}</td><td class="num">${r.current_slot}</td>
<td class="num">${r.generation}</td><td class="num">${r.oldest_live_generation}</td>
<td class="num">${r.slots_in_use} / ${r.slot_cap}</td><td>${(r.held_slots || []).join(', ') || '–'}</td>
<td>${formatTime(r.last_rotated_at)}</td><td>${r.last_rotate} <small>${formatTime(r.last_rotate_at)}</small></td>
<td>${r.last_prune} <small>${formatTime(r.last_prune_at)}</small></td><td class="num">${r.prune_backoff_level}</td>
<td>${deadTuples(r.dead_tuples)}</td></tr>`)}</tbody></table>
<h2>Maintenance steps</h2>
<table id="maintenance"><thead><tr><th>step</th><th>last outcome</th><th>last run</th><th class="num">runs</th><th class="num">errors</th></tr></thead>
<tbody>${tasks.map((t) => html`<tr data-task="${t.task}"><td>${t.task}</td><td>${t.last_outcome}</td><td>${formatTime(t.last_run_at)}</td>
<td class="num">${t.runs}</td><td class="num${Number(t.errors) > 0 ? ' bad' : ''}">${t.errors}</td></tr>`)}</tbody></table>`);
}

module.exports = { render };
