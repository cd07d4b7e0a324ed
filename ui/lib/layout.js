'use strict';
// The frame of every page: the navigation, who the visitor is, a message
// left by the last action, and the page's own content.
const { html } = require('./html');

const SCREENS = [
  ['/', 'Overview'],
  ['/queues', 'Queues'],
  ['/jobs', 'Jobs'],
  ['/dlq', 'DLQ'],
  ['/periodic', 'Periodic'],
  ['/storage', 'Storage'],
];

function who(ctx) {
  if (ctx.visitor.admin) {
    return html`<form method="post" action="/logout" class="who">
      <input type="hidden" name="csrf" value="${ctx.visitor.csrf}">
      <span class="badge admin">admin</span> <button type="submit">Log out</button></form>`;
  }
  if (ctx.auth.enabled) return html`<div class="who"><span class="badge">read-only</span> <a href="/login">Log in</a></div>`;
  return html`<div class="who"><span class="badge" title="AWA_UI_ADMIN_PASSWORD is not set">read-only</span></div>`;
}

function page(ctx, title, body) {
  const flash = ctx.visitor.entry && ctx.visitor.entry.flash;
  if (flash) ctx.visitor.entry.flash = null;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · awa</title>
<link rel="stylesheet" href="/static/style.css">
<script src="/static/app.js" defer></script>
</head>
<body data-screen="${ctx.screen}">
<header>
  <a class="brand" href="/">awa</a>
  <nav>${SCREENS.map(([href, name]) =>
    html`<a href="${href}"${ctx.screen === href ? html` class="current"` : ''}>${name}</a>`)}</nav>
  <span class="db">database ${ctx.database}</span>
  ${who(ctx)}
</header>
<main>
${flash ? html`<p class="flash ${flash.kind}" role="status">${flash.text}</p>` : ''}
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
}

// A form that posts an action: the CSRF token always in it.
function actionForm(ctx, action, fields, label, options = {}) {
  return html`<form method="post" action="${action}" class="inline${options.danger ? ' danger' : ''}"${
    options.confirm ? html` data-confirm="${options.confirm}"` : ''}>
<input type="hidden" name="csrf" value="${ctx.visitor.csrf}">
${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
<button type="submit">${label}</button></form>`;
}

function table(columns, rows, options = {}) {
  if (rows.length === 0) return html`<p class="empty">${options.empty || 'None.'}</p>`;
  return html`<table${options.id ? html` id="${options.id}"` : ''}>
<thead><tr>${columns.map((c) => html`<th${c.num ? html` class="num"` : ''}>${c.label}</th>`)}</tr></thead>
<tbody>${rows.map((row) => html`<tr${options.rowAttrs ? options.rowAttrs(row) : ''}>${columns.map((c) =>
    html`<td${c.num ? html` class="num"` : ''}${c.attrs ? c.attrs(row) : ''}>${c.cell ? c.cell(row) : row[c.key]}</td>`)}</tr>`)}</tbody>
</table>`;
}

module.exports = { page, actionForm, table, SCREENS };
