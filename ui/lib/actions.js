'use strict';
// What an admin can change, one function per form. Each runs in one
// transaction as awa_admin (lib/db.js), through awa's own SQL functions, and
// returns the message the next page shows. The server checks the login and
// the CSRF token before any of these runs (server.js).
const jobs = require('../pages/jobs');
const { isSqlError } = require('./html');

class ActionError extends Error {}

function required(body, name, pattern) {
  const v = body[name];
  if (typeof v !== 'string' || v === '' || (pattern && !pattern.test(v))) throw new ActionError(`missing or bad ${name}`);
  return v;
}

const ID = /^[0-9]{1,19}$/;

const CONFIGURE = [
  ['dlq_enabled', 'boolean'],
  ['aging_interval', 'awa.duration'],
  ['default_deadline', 'awa.duration'],
  ['max_running', 'int'],
  ['rate_limit', 'text'],
  ['burst', 'int'],
  ['fairness', 'text'],
  ['key_max_running', 'int'],
  ['key_rate_limit', 'text'],
  ['key_burst', 'int'],
];

const actions = {
  async 'queue/pause'(ctx, body) {
    const queue = required(body, 'queue');
    await ctx.db.write((c) => c.query('SELECT awa.pause_queue($1)', [queue]));
    return `Queue ${queue} paused: claims take none of its jobs until it is resumed.`;
  },

  async 'queue/resume'(ctx, body) {
    const queue = required(body, 'queue');
    await ctx.db.write((c) => c.query('SELECT awa.resume_queue($1)', [queue]));
    return `Queue ${queue} resumed.`;
  },

  async 'queue/configure'(ctx, body) {
    const queue = required(body, 'queue');
    const names = [];
    const values = [queue];
    for (const [name, type] of CONFIGURE) {
      const v = typeof body[name] === 'string' ? body[name].trim() : '';
      if (v === '') continue;
      values.push(v);
      names.push(`${name} => $${values.length}::${type}`);
    }
    if (names.length === 0) return `Nothing to change for queue ${queue}.`;
    try {
      await ctx.db.write((c) => c.query(`SELECT awa.configure_queue($1, ${names.join(', ')})`, values));
    } catch (err) {
      if (isSqlError(err)) err.message = `queue ${queue}: ${err.message}`;
      throw err;
    }
    return `Settings of queue ${queue} saved.`;
  },

  async 'job/cancel'(ctx, body) {
    const id = required(body, 'job_id', ID);
    const r = await ctx.db.write((c) => c.query('SELECT awa.cancel($1::bigint) AS outcome', [id]));
    return {
      cancelled: `Job ${id} cancelled.`,
      cancel_requested: `Job ${id} cancelled while running: its worker learns it at its next heartbeat (cancel_requested).`,
      already_finished: `Job ${id} had already finished.`,
      not_found: `No job ${id}.`,
    }[r.rows[0].outcome] || `Job ${id}: ${r.rows[0].outcome}.`;
  },

  async 'dlq/retry'(ctx, body) {
    const id = required(body, 'job_id', ID);
    const r = await ctx.db.write((c) => c.query('SELECT awa.dlq_retry(ARRAY[$1::bigint]) AS n', [id]));
    return r.rows[0].n > 0 ? `Job ${id} retried: it is available.` : `Job ${id} is not in the DLQ.`;
  },

  async 'job/retry'(ctx, body) {
    const id = required(body, 'job_id', ID);
    const r = await ctx.db.write((c) => c.query('SELECT awa.retry_jobs(ARRAY[$1::bigint]) AS n', [id]));
    return r.rows[0].n > 0 ? `Job ${id} retried: it is available.` : `Job ${id} is not failed or cancelled.`;
  },

  async 'job/move'(ctx, body) {
    const id = required(body, 'job_id', ID);
    const queue = required(body, 'queue');
    const r = await ctx.db.write((c) => c.query('SELECT awa.move_jobs(ARRAY[$1::bigint], $2) AS n', [id, queue]));
    return r.rows[0].n > 0 ? `Job ${id} moved to queue ${queue}.` : `Job ${id} was not moved (not waiting, or already in ${queue}).`;
  },

  async 'job/priority'(ctx, body) {
    const id = required(body, 'job_id', ID);
    const priority = required(body, 'priority', /^-?[0-9]{1,9}$/);
    const r = await ctx.db.write((c) => c.query('SELECT awa.set_priority(ARRAY[$1::bigint], $2::int) AS n', [id, priority]));
    return r.rows[0].n > 0 ? `Job ${id} now has priority ${priority}.` : `Job ${id} was not changed (not waiting, or already at ${priority}).`;
  },

  async 'dlq/purge'(ctx, body) {
    const id = required(body, 'job_id', ID);
    const r = await ctx.db.write((c) => c.query('SELECT awa.dlq_purge(ARRAY[$1::bigint]) AS n', [id]));
    return r.rows[0].n > 0 ? `Job ${id} purged.` : `Job ${id} is not in the DLQ.`;
  },

  async 'bulk/start'(ctx, body) {
    const action = required(body, 'action', /^(cancel|retry|dlq_retry|dlq_purge|move|set_priority)$/);
    // The filter as the list's forms make it: an object of known filters,
    // every one of them used (a key the list does not know is refused, not
    // dropped: dropping it would widen the operation).
    let filter;
    try {
      const given = JSON.parse(required(body, 'filter'));
      if (given === null || typeof given !== 'object' || Array.isArray(given)) throw new Error('not a JSON object');
      for (const k of Object.keys(given)) {
        if (!jobs.TEXT_FILTERS.includes(k) && !jobs.JSON_FILTERS.includes(k)) throw new Error(`unknown filter ${k}`);
      }
      filter = jobs.filtersOf(Object.fromEntries(Object.entries(given).map(
        ([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)])));
      if (Object.keys(filter).length !== Object.keys(given).length) throw new Error('an empty filter value');
    } catch (err) {
      throw new ActionError(`bad filter: ${err.message}`);
    }
    // A cancel of every unfinished job of every queue is not a click away.
    if (action === 'cancel' && Object.keys(filter).length === 0) {
      throw new ActionError('a bulk cancel needs a filter (a queue, a kind, a tag, ...)');
    }
    const { names, values } = jobs.namedArgs(filter, 2);
    // The target of a move or a priority change (awa.bulk_start refuses a
    // missing or an extra one, 22023).
    if (action === 'move') {
      values.push(required(body, 'to_queue'));
      names.push(`to_queue => $${values.length + 1}::text`);
    }
    if (action === 'set_priority') {
      values.push(required(body, 'to_priority', /^-?[0-9]{1,9}$/));
      names.push(`to_priority => $${values.length + 1}::int`);
    }
    const r = await ctx.db.write((c) => c.query(
      `SELECT awa.bulk_start($1${names.length ? ', ' : ''}${names.join(', ')}) AS op`, [action, ...values]));
    const op = r.rows[0].op;
    ctx.bulk.run(op);
    return `Bulk operation ${op} (${action}) started; its progress is under Bulk operations below (reload to follow it).`;
  },

  async 'bulk/resume'(ctx, body) {
    const op = required(body, 'op_id', ID);
    const r = await ctx.db.read('awa_admin', (c) => c.query('SELECT state FROM awa.bulk_operations WHERE op_id = $1::bigint', [op]));
    if (r.rows.length === 0) throw new ActionError(`no bulk operation ${op}`);
    if (r.rows[0].state !== 'running') return `Bulk operation ${op} is ${r.rows[0].state}: nothing to resume.`;
    ctx.bulk.run(op);
    return `Bulk operation ${op} resumed.`;
  },

  async 'bulk/cancel'(ctx, body) {
    const op = required(body, 'op_id', ID);
    const r = await ctx.db.write((c) => c.query('SELECT awa.bulk_cancel($1::bigint) AS stopped', [op]));
    return r.rows[0].stopped ? `Bulk operation ${op} stopped.` : `Bulk operation ${op} had already ended.`;
  },
};

module.exports = { actions, ActionError };
