'use strict';
// The login: one password (AWA_UI_ADMIN_PASSWORD); a visitor who gives it
// acts as awa_admin until logout or AWA_UI_SESSION_SECONDS without use.
const { html } = require('../lib/html');
const { page } = require('../lib/layout');

function render(ctx, message) {
  ctx.screen = '/login';
  if (!ctx.auth.enabled) {
    return page(ctx, 'Log in', html`<p class="note">This UI is read-only: AWA_UI_ADMIN_PASSWORD is not set where it runs.</p>`);
  }
  if (ctx.visitor.admin) return page(ctx, 'Log in', html`<p class="note">You are logged in.</p>`);
  return page(ctx, 'Log in', html`
${message ? html`<p class="flash error" role="alert">${message}</p>` : ''}
<form method="post" action="/login" class="login" id="login">
<input type="hidden" name="csrf" value="${ctx.visitor.csrf}">
<label>Admin password <input type="password" name="password" autocomplete="current-password" autofocus></label>
<button type="submit">Log in</button></form>`);
}

function submit(ctx, res, body, send) {
  const outcome = ctx.auth.login(ctx.visitor, body.password, ctx.address);
  ctx.loginOutcome = outcome;
  if (outcome === 'ok') {
    return send(res, 303, 'text/plain; charset=utf-8', '', { Location: '/', 'Set-Cookie': ctx.visitor.setCookie });
  }
  const message = {
    wrong: 'Wrong password.',
    throttled: 'Too many failed logins from this address in the last minute: wait a minute.',
    disabled: 'This UI is read-only: AWA_UI_ADMIN_PASSWORD is not set.',
  }[outcome];
  return send(res, outcome === 'throttled' ? 429 : 403, 'text/html; charset=utf-8', String(render(ctx, message)));
}

module.exports = { render, submit };
