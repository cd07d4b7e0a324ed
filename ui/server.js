#!/usr/bin/env node
'use strict';
// awa's web UI: an HTTP server on 127.0.0.1 that reads awa's SQL surface and,
// for a logged-in admin, acts through awa's SQL functions.
// Settings: DATABASE_URL, AWA_UI_PORT, AWA_UI_ADMIN_PASSWORD (docs/operations-ui.md).
const http = require('http');
const fs = require('fs');
const path = require('path');
const { load } = require('./lib/config');
const { Database } = require('./lib/db');
const { Auth } = require('./lib/auth');
const { Sampler } = require('./lib/sampler');
const { BulkRunner } = require('./lib/bulk_runner');
const { actions, ActionError } = require('./lib/actions');
const { html, isSqlError } = require('./lib/html');
const { page } = require('./lib/layout');
const login = require('./pages/login');

// The screens: path -> page module (each renders one screen from the database).
const SCREENS = {
  '/': require('./pages/overview'),
  '/queues': require('./pages/queues'),
  '/jobs': require('./pages/jobs'),
  '/dlq': require('./pages/dlq'),
  '/periodic': require('./pages/periodic'),
  '/storage': require('./pages/storage'),
};
const JOB_PAGE = require('./pages/job');
const OVERVIEW = SCREENS['/'];

const STATIC = {
  '/static/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/static/style.css': ['style.css', 'text/css; charset=utf-8'],
};
const MAX_BODY = 64 * 1024;
const DISCARD_LIMIT = 1024 * 1024;

const SECURITY_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

function send(res, status, type, body, headers = {}) {
  res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': type, ...headers });
  res.end(body);
}

// A local path to go back to after an action (never another site).
// Printable ASCII only: a Location header takes nothing else.
function localPath(value) {
  return typeof value === 'string' && /^\/(?![/\\])[\x21-\x7e]*$/.test(value) ? value : '/';
}

function readForm(req) {
  return new Promise((resolve, reject) => {
    const type = String(req.headers['content-type'] || '').split(';')[0].trim();
    if (type !== 'application/x-www-form-urlencoded') {
      reject(Object.assign(new Error('a form must be posted as application/x-www-form-urlencoded'), { status: 415 }));
      return;
    }
    // A body over MAX_BODY is read on and dropped (so the client gets its
    // 413 rather than a reset), up to DISCARD_LIMIT, past which the
    // connection is cut.
    let size = 0;
    const chunks = [];
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > DISCARD_LIMIT) {
        req.destroy();
        return;
      }
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > MAX_BODY) reject(Object.assign(new Error(`form larger than ${MAX_BODY} bytes`), { status: 413 }));
      else resolve(Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    });
    req.on('error', reject);
  });
}

// An error page: PostgreSQL's own message and SQLSTATE for an error it
// raised; for anything else (the database unreachable, a bug) a plain
// sentence, the details going to the UI's log only.
function errorPage(ctx, status, err) {
  ctx.status = status;
  const sql = isSqlError(err);
  const text = sql || status === 404 ? err.message : 'The database could not be reached, or the UI failed; see the UI\'s log.';
  return page(ctx, status === 403 ? 'Not allowed' : 'Error', html`<p class="flash error" role="alert">${text}${
    sql ? html` (SQLSTATE ${err.code})` : ''}</p>${sql && err.hint ? html`<p class="note">${err.hint}</p>` : ''}`);
}

// The name in a Host header, without its port: localhost, 127.0.0.1, [::1], a name.
function hostName(header) {
  const h = String(header || '').toLowerCase();
  const m = /^(\[[0-9a-f:.]+\]|[^:]+)(:[0-9]+)?$/.exec(h);
  return m ? m[1] : null;
}

function createServer(config, deps) {
  const { db, auth, sampler, bulk, database } = deps;
  const hosts = new Set(['localhost', '127.0.0.1', '[::1]', ...config.allowedHosts]);

  async function handleAction(ctx, req, res, name) {
    let body;
    try {
      body = await readForm(req);
    } catch (err) {
      return send(res, err.status || 400, 'text/plain; charset=utf-8', `refused: ${err.message}\n`);
    }
    // The CSRF token first (every form, the login's included), then the login.
    if (!auth.csrfValid(ctx.visitor, body.csrf)) {
      return send(res, 403, 'text/plain; charset=utf-8', 'refused: missing or wrong CSRF token (reload the page and try again)\n');
    }
    if (name === 'login') {
      const sent = login.submit(ctx, res, body, send);
      console.log(`awa-ui: ${new Date().toISOString()} ${ctx.address} login: ${ctx.loginOutcome}`);
      return sent;
    }
    if (name === 'logout') {
      auth.logout(ctx.visitor);
      return send(res, 303, 'text/plain; charset=utf-8', '', { Location: '/', 'Set-Cookie': ctx.visitor.setCookie });
    }
    if (!ctx.visitor.admin) {
      return send(res, 403, 'text/plain; charset=utf-8',
        auth.enabled ? 'refused: log in first (/login)\n' : 'refused: this UI is read-only (AWA_UI_ADMIN_PASSWORD is not set)\n');
    }
    const action = Object.prototype.hasOwnProperty.call(actions, name) ? actions[name] : null;
    if (!action) return send(res, 404, 'text/plain; charset=utf-8', 'no such action\n');
    let flash;
    try {
      flash = { kind: 'ok', text: await action(ctx, body) };
    } catch (err) {
      if (!(err instanceof ActionError) && !isSqlError(err)) throw err;
      flash = { kind: 'error', text: `${err.message}${err.hint ? ` (${err.hint})` : ''}${isSqlError(err) ? ` [SQLSTATE ${err.code}]` : ''}` };
    }
    ctx.visitor.entry.flash = flash;
    // One line per action on standard output: the UI's audit trail (a proxy in
    // front says who; this says what, from where, and what came of it).
    const fields = Object.fromEntries(Object.entries(body).filter(([k]) => !['csrf', 'password', 'back'].includes(k)));
    console.log(`awa-ui: ${new Date().toISOString()} ${ctx.address} action ${name} ${JSON.stringify(fields)} -> ${flash.kind}: ${flash.text}`);
    return send(res, 303, 'text/plain; charset=utf-8', '', { Location: localPath(body.back) });
  }

  async function handle(req, res) {
    if (!hosts.has(hostName(req.headers.host))) {
      return send(res, 421, 'text/plain; charset=utf-8',
        'refused: unknown Host (add it to AWA_UI_ALLOWED_HOSTS when a reverse proxy passes its own)\n');
    }
    let url;
    try {
      url = new URL(req.url, 'http://ui.invalid');
    } catch (_) {
      return send(res, 400, 'text/plain; charset=utf-8', 'bad request target\n');
    }
    const visitor = auth.visitor(req, url.pathname !== '/api/overview');
    if (visitor.setCookie) res.setHeader('Set-Cookie', visitor.setCookie);
    const ctx = {
      db, auth, sampler, bulk, database, visitor, address: req.socket.remoteAddress,
      role: visitor.admin ? 'awa_admin' : 'awa_monitor',
      query: Object.fromEntries(url.searchParams),
      params: {},
      url: url.pathname + url.search,
      screen: url.pathname,
      status: 200,
    };
    try {
      if (req.method === 'POST') {
        if (url.pathname === '/login') return await handleAction(ctx, req, res, 'login');
        if (url.pathname === '/logout') return await handleAction(ctx, req, res, 'logout');
        if (url.pathname.startsWith('/actions/')) return await handleAction(ctx, req, res, url.pathname.slice(9));
        return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
      if (STATIC[url.pathname]) {
        const [file, type] = STATIC[url.pathname];
        return send(res, 200, type, fs.readFileSync(path.join(__dirname, 'static', file)), { 'Cache-Control': 'max-age=300' });
      }
      if (url.pathname === '/api/overview') {
        try {
          return send(res, 200, 'application/json; charset=utf-8', JSON.stringify(await OVERVIEW.data(ctx)));
        } catch (err) {
          console.error(`awa-ui: /api/overview: ${err.message}`);
          return send(res, 503, 'application/json; charset=utf-8',
            JSON.stringify({ error: isSqlError(err) ? err.message : 'the database is unreachable' }));
        }
      }
      if (url.pathname === '/healthz') return send(res, 200, 'text/plain; charset=utf-8', 'ok\n');
      if (url.pathname === '/favicon.ico') return send(res, 204, 'text/plain; charset=utf-8', '');
      if (url.pathname === '/login') return send(res, 200, 'text/html; charset=utf-8', String(login.render(ctx)));
      let screen = SCREENS[url.pathname];
      const job = /^\/jobs\/([0-9]{1,18})$/.exec(url.pathname);
      if (job) {
        screen = JOB_PAGE;
        ctx.params.id = job[1];
        ctx.screen = '/jobs';
      }
      if (!screen) return send(res, 404, 'text/html; charset=utf-8', String(errorPage(ctx, 404, new Error('No such page.'))));
      const body = String(await screen.render(ctx));
      return send(res, ctx.status, 'text/html; charset=utf-8', body);
    } catch (err) {
      const status = isSqlError(err) && err.code === '42501' ? 403 : 500;
      if (status === 500) console.error(`awa-ui: ${req.method} ${url.pathname}: ${err.stack || err.message}`);
      try {
        return send(res, status, 'text/html; charset=utf-8', String(errorPage(ctx, status, err)));
      } catch (_) {
        return send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
      }
    }
  }

  return http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      console.error(`awa-ui: ${err.stack || err.message}`);
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
    });
  });
}

async function main() {
  let config;
  try {
    config = load();
  } catch (err) {
    console.error(`awa-ui: ${err.message}`);
    process.exit(2);
  }
  const db = new Database(config);
  let database;
  try {
    const login = await db.checkRoles(config.adminPassword !== null);
    database = (await db.pool.query('SELECT current_database() AS d')).rows[0].d;
    console.log(`awa-ui: connected to database ${database} as ${login}`);
  } catch (err) {
    console.error(`awa-ui: ${err.message}`);
    if (!isSqlError(err)) console.error('awa-ui: is PostgreSQL running where DATABASE_URL points, and does it accept this role?');
    process.exit(1);
  }
  const auth = new Auth(config);
  const sampler = new Sampler(db, config.sampleSeconds);
  const bulk = new BulkRunner(db);
  sampler.start();
  const server = createServer(config, { db, auth, sampler, bulk, database });
  server.on('error', (err) => {
    console.error(`awa-ui: ${err.message}`);
    process.exit(1);
  });
  server.listen(config.port, config.host, () => {
    console.log(`awa-ui: listening on http://${config.host}:${config.port}/ (${
      auth.enabled ? 'read-only until login' : 'read-only: AWA_UI_ADMIN_PASSWORD is not set'})`);
  });
  const stop = () => {
    sampler.stop();
    server.close();
    db.end().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (require.main === module) main();

module.exports = { createServer, localPath };
