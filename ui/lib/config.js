'use strict';
// The UI's settings, from the environment (docs/operations-ui.md, "The web UI").

function port(value) {
  if (value === undefined || value === '') return 8080;
  if (!/^[0-9]+$/.test(value) || Number(value) < 1 || Number(value) > 65535) {
    throw new Error(`AWA_UI_PORT must be a port number between 1 and 65535, not "${value}"`);
  }
  return Number(value);
}

function seconds(name, value, fallback, min, max) {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new Error(`${name} must be a number of seconds between ${min} and ${max}, not "${value}"`);
  }
  return n;
}

function load(env = process.env) {
  if (!env.DATABASE_URL) {
    throw new Error('DATABASE_URL is not set: pass the database where awa is installed, ' +
      'e.g. DATABASE_URL=postgresql://awa_ui@localhost:5432/app (scripts/ui.sh sets the demo server\'s)');
  }
  const password = env.AWA_UI_ADMIN_PASSWORD;
  if (password !== undefined && password !== '' && password.length < 12) {
    throw new Error('AWA_UI_ADMIN_PASSWORD must be at least 12 characters (unset it for a read-only UI)');
  }
  return {
    databaseUrl: env.DATABASE_URL,
    host: env.AWA_UI_HOST || '127.0.0.1',
    port: port(env.AWA_UI_PORT),
    adminPassword: password ? password : null,
    // Charts: one sample of the metrics surface every this many seconds, an hour kept.
    sampleSeconds: seconds('AWA_UI_SAMPLE_SECONDS', env.AWA_UI_SAMPLE_SECONDS, 5, 1, 300),
    // A login lasts this long without use.
    sessionSeconds: seconds('AWA_UI_SESSION_SECONDS', env.AWA_UI_SESSION_SECONDS, 3600, 60, 86400),
    // Every statement of a page or an action, at most.
    statementTimeoutMs: 1000 * seconds('AWA_UI_STATEMENT_TIMEOUT', env.AWA_UI_STATEMENT_TIMEOUT, 10, 1, 600),
    // Host names the UI answers to besides localhost, 127.0.0.1 and [::1]
    // (a reverse proxy that passes its own Host): any other Host header is
    // refused, so a web page cannot reach the UI by rebinding its DNS name.
    allowedHosts: (env.AWA_UI_ALLOWED_HOSTS || '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean),
    // Cookies marked Secure: set when a TLS reverse proxy serves the UI.
    secureCookies: env.AWA_UI_SECURE_COOKIES === '1',
  };
}

module.exports = { load };
