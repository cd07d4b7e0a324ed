'use strict';
// Markup. Every value reaches a page through html``, which escapes each
// interpolated value unless it is markup that html`` made itself: text from
// the database (a job's args, an error, a queue name) is always text.

class Markup {
  constructor(text) {
    this.text = text;
  }
  toString() {
    return this.text;
  }
}

const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escape(value) {
  return String(value).replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

function render(value) {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Markup) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value instanceof Date) return escape(formatTime(value));
  return escape(value);
}

function html(strings, ...values) {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Markup(out);
}

// A timestamp as UTC, to the second: 2026-12-05 07:48:36Z.
function formatTime(value) {
  if (value === null || value === undefined) return '';
  const d = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  return d.toISOString().replace('T', ' ').slice(0, 19) + 'Z';
}

// A duration in seconds, short: 0.4 s, 12 s, 5 min, 3.2 h.
function formatAge(seconds) {
  if (seconds === null || seconds === undefined) return '';
  const s = Number(seconds);
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} d`;
}

function json(value) {
  return value === null || value === undefined ? '' : JSON.stringify(value, null, 2);
}

// An error PostgreSQL raised (it has a SQLSTATE and a severity), as opposed
// to a failure to reach it (ECONNREFUSED and the like), which is the UI's 500.
function isSqlError(err) {
  return Boolean(err && typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code) && err.severity);
}

module.exports = { html, escape, formatTime, formatAge, json, Markup, isSqlError };
