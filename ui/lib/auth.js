'use strict';
// Who may act. Every visitor carries a random session id in a cookie
// (HttpOnly, SameSite=Strict); the CSRF token of every form is an HMAC of that
// id under a key made at start, so it needs no state for visitors and a page
// of another site can neither read nor forge it. A login (the password of
// AWA_UI_ADMIN_PASSWORD) gives the visitor a new id, remembered as an admin
// session until it is unused for AWA_UI_SESSION_SECONDS or the UI restarts.
const crypto = require('crypto');

const COOKIE = 'awa_ui';
const MAX_ADMIN_SESSIONS = 1000;
// Failed logins: at most this many a minute from one client address (behind
// a reverse proxy, every visitor has the proxy's). Per address, so a guesser
// cannot lock the admin out from elsewhere; at most MAX_ADDRESSES addresses
// are remembered (the oldest forgotten first).
const MAX_FAILURES_PER_MINUTE = 10;
const MAX_ADDRESSES = 10000;

function digest(text) {
  return crypto.createHash('sha256').update(String(text), 'utf8').digest();
}

function sameText(a, b) {
  return crypto.timingSafeEqual(digest(a), digest(b));
}

function parseCookies(header) {
  const out = {};
  for (const part of String(header || '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

class Auth {
  constructor(config) {
    this.password = config.adminPassword;
    this.ttlMs = config.sessionSeconds * 1000;
    this.secureCookies = config.secureCookies;
    this.key = crypto.randomBytes(32);
    this.admins = new Map(); // id -> { expires, flash }
    this.failures = new Map(); // address -> times of failed logins in the last minute
  }

  get enabled() {
    return this.password !== null;
  }

  // The request's visitor: { id, admin, csrf, setCookie }. A request that
  // touches the session (every one but the overview's refresh) keeps a login
  // alive for another AWA_UI_SESSION_SECONDS.
  visitor(req, touch = true) {
    let id = parseCookies(req.headers.cookie)[COOKIE];
    let setCookie = null;
    if (!id || !/^[0-9a-f]{64}$/.test(id)) {
      id = crypto.randomBytes(32).toString('hex');
      setCookie = this.cookie(id);
    }
    const entry = this.admins.get(id);
    const admin = Boolean(entry && entry.expires > Date.now());
    if (entry && !admin) this.admins.delete(id);
    if (admin && touch) entry.expires = Date.now() + this.ttlMs;
    return { id, admin, csrf: this.csrfFor(id), setCookie, entry: admin ? entry : null };
  }

  cookie(id) {
    return `${COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict${this.secureCookies ? '; Secure' : ''}`;
  }

  csrfFor(id) {
    return crypto.createHmac('sha256', this.key).update(id).digest('hex');
  }

  csrfValid(visitor, token) {
    return typeof token === 'string' && token.length > 0 && sameText(token, visitor.csrf);
  }

  // 'ok' (with the new session id in visitor.id), 'wrong', 'throttled' or 'disabled'.
  login(visitor, password, address) {
    if (!this.enabled) return 'disabled';
    const now = Date.now();
    const key = String(address || '');
    const recent = (this.failures.get(key) || []).filter((t) => t > now - 60000);
    if (recent.length >= MAX_FAILURES_PER_MINUTE) return 'throttled';
    if (typeof password !== 'string' || !sameText(password, this.password)) {
      recent.push(now);
      this.failures.delete(key);
      this.failures.set(key, recent);
      while (this.failures.size > MAX_ADDRESSES) this.failures.delete(this.failures.keys().next().value);
      return 'wrong';
    }
    this.failures.delete(key);
    this.admins.delete(visitor.id);
    this.prune(now);
    const id = crypto.randomBytes(32).toString('hex');
    this.admins.set(id, { expires: now + this.ttlMs, flash: null });
    visitor.id = id;
    visitor.admin = true;
    visitor.csrf = this.csrfFor(id);
    visitor.setCookie = this.cookie(id);
    return 'ok';
  }

  logout(visitor) {
    this.admins.delete(visitor.id);
    const id = crypto.randomBytes(32).toString('hex');
    visitor.id = id;
    visitor.admin = false;
    visitor.csrf = this.csrfFor(id);
    visitor.setCookie = this.cookie(id);
  }

  prune(now) {
    for (const [id, entry] of this.admins) if (entry.expires <= now) this.admins.delete(id);
    while (this.admins.size >= MAX_ADMIN_SESSIONS) this.admins.delete(this.admins.keys().next().value);
  }
}

module.exports = { Auth, parseCookies };
