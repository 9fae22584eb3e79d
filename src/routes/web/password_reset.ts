import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import { JsonableError } from '../../errors.js';
import { escapeHtml } from '../../lib/html.js';
import { createMailer } from '../../lib/email.js';
import { accessPasswordResetToken, doResetPassword, doSendPasswordReset } from '../../actions/password_reset.js';
import { accessEmailChangeToken, doConfirmEmailChange } from '../../actions/email_change.js';
import { isStrongEnoughPassword } from '../../actions/users.js';
import { CSRF_COOKIE, cookieValue, ensureCsrfCookie } from '../../plugins/session.js';
import { safeEqual } from '../../plugins/auth.js';
import { requestRealm } from '../endpoint.js';

/**
 * Zulip's password reset pages (/accounts/password/reset/ and the link's page), rendered here as
 * plain HTML forms: they must work for someone who cannot log in, with nothing but the link.
 * CSRF: the token cookie is echoed in a hidden field (Django's csrfmiddlewaretoken).
 */

type Field = { name: string; label: string; type: string; autocomplete: string };

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:26rem;margin:3rem auto;padding:0 1rem;line-height:1.4}label{display:block;margin:.8rem 0 .2rem;font-weight:600}input{width:100%;box-sizing:border-box;padding:.5rem;font:inherit}button{margin-top:1rem;padding:.5rem 1rem;font:inherit}.error{color:#b00020}</style></head>
<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;
}

function formPage(title: string, intro: string, fields: Field[], submit: string, csrf: string, error?: string): string {
  const inputs = fields
    .map((f, i) => `<label for="${f.name}">${escapeHtml(f.label)}</label><input id="${f.name}" name="${f.name}" type="${f.type}" autocomplete="${f.autocomplete}" required${i === 0 ? ' autofocus' : ''}>`)
    .join('');
  const err = error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '';
  return page(
    title,
    `<p>${escapeHtml(intro)}</p>${err}<form method="post"><input type="hidden" name="csrfmiddlewaretoken" value="${escapeHtml(csrf)}">${inputs}<button type="submit">${escapeHtml(submit)}</button></form><p><a href="/login">Back to log in</a></p>`,
  );
}

const send = (reply: FastifyReply, status: number, html: string) => reply.code(status).header('Cache-Control', 'no-store').type('text/html; charset=utf-8').send(html);

/** The CSRF token the page's form must echo: the request's cookie, or a new one set on this reply. */
function csrfToken(services: Services, req: FastifyRequest, reply: FastifyReply): string {
  const set = ensureCsrfCookie(services, req);
  if (!set) return cookieValue(req, CSRF_COOKIE)!;
  reply.header('Set-Cookie', set);
  return set.slice(CSRF_COOKIE.length + 1, set.indexOf(';'));
}

function form(req: FastifyRequest): Record<string, string> {
  return req.body && typeof req.body === 'object' ? (req.body as Record<string, string>) : {};
}

function formCsrfValid(req: FastifyRequest): boolean {
  const cookie = cookieValue(req, CSRF_COOKIE);
  const field = form(req).csrfmiddlewaretoken;
  return !!cookie && typeof field === 'string' && safeEqual(cookie, field);
}

const EMAIL_FIELDS: Field[] = [{ name: 'email', label: 'Email', type: 'email', autocomplete: 'email' }];
const PASSWORD_FIELDS: Field[] = [
  { name: 'new_password1', label: 'New password', type: 'password', autocomplete: 'new-password' },
  { name: 'new_password2', label: 'Confirm password', type: 'password', autocomplete: 'new-password' },
];
const REQUEST_INTRO = 'Enter your email address and we will send you a link to choose a new password.';
const INVALID_LINK = page('Invalid link', 'This password reset link is invalid, was already used, or has expired. <a href="/accounts/password/reset">Ask for a new one</a>.');

export function registerPasswordResetRoutes(app: FastifyInstance, services: Services): void {
  const mailer = createMailer(services.config, services.log);
  app.addHook('onClose', async () => mailer.close());

  // The link of an email change (PATCH /settings `email`), Zulip's confirm_email_change page.
  app.get('/accounts/confirm_new_email/:token', async (req: FastifyRequest<{ Params: { token: string } }>, reply) => {
    const realm = await requestRealm(services, req);
    const change = await accessEmailChangeToken(services, realm, req.params.token);
    if (!change) return send(reply, 404, page('Invalid link', 'This confirmation link is invalid, was already used, or has expired. Ask for the change again in your settings.'));
    try {
      await doConfirmEmailChange(services, realm, change.user, change.email);
    } catch (e) {
      if (e instanceof JsonableError) return send(reply, 400, page('Email address not changed', escapeHtml(e.message)));
      throw e;
    }
    return send(reply, 200, page('Email address changed', `The email address of your account is now ${escapeHtml(change.email)}. <a href="/">Continue to the app</a>.`));
  });

  app.get('/accounts/password/reset', async (req, reply) => {
    await requestRealm(services, req);
    return send(reply, 200, formPage('Reset your password', REQUEST_INTRO, EMAIL_FIELDS, 'Send reset link', csrfToken(services, req, reply)));
  });

  app.post('/accounts/password/reset', async (req, reply) => {
    const realm = await requestRealm(services, req);
    if (!formCsrfValid(req)) return send(reply, 403, page('Form expired', 'Reload the page and try again. <a href="/accounts/password/reset">Reset your password</a>'));
    const email = (form(req).email ?? '').trim();
    if (!email) return send(reply, 400, formPage('Reset your password', REQUEST_INTRO, EMAIL_FIELDS, 'Send reset link', csrfToken(services, req, reply), 'Enter your email address.'));
    try {
      // Zulip's password_reset_form_by_email limit: a few emails per address, like password attempts.
      await services.rateLimiter.checkAuthAttempt(realm.id, `password-reset:${email}`);
    } catch (e) {
      if (e instanceof JsonableError && e.code === 'RATE_LIMIT_HIT') return send(reply, 429, page('Too many requests', 'Too many reset emails were asked for this address. Wait a while and try again.'));
      throw e;
    }
    await doSendPasswordReset(services, mailer, realm, email);
    return send(reply, 200, page('Check your email', `If ${escapeHtml(email)} has an account here, we have sent it a link to choose a new password. It may take a few minutes to arrive.`));
  });

  app.get('/accounts/password/reset/:token', async (req: FastifyRequest<{ Params: { token: string } }>, reply) => {
    const realm = await requestRealm(services, req);
    const user = await accessPasswordResetToken(services, realm, req.params.token);
    if (!user) return send(reply, 400, INVALID_LINK);
    return send(reply, 200, formPage('Choose a new password', `For ${user.delivery_email}.`, PASSWORD_FIELDS, 'Change my password', csrfToken(services, req, reply)));
  });

  app.post('/accounts/password/reset/:token', async (req: FastifyRequest<{ Params: { token: string } }>, reply) => {
    const realm = await requestRealm(services, req);
    await services.rateLimiter.checkApi(req, reply, null);
    const user = await accessPasswordResetToken(services, realm, req.params.token);
    if (!user) return send(reply, 400, INVALID_LINK);
    const again = (error: string, status = 400) =>
      send(reply, status, formPage('Choose a new password', `For ${user.delivery_email}.`, PASSWORD_FIELDS, 'Change my password', csrfToken(services, req, reply), error));
    if (!formCsrfValid(req)) return again('The form expired; enter the new password again.', 403);
    const f = form(req);
    const password = f.new_password1 ?? '';
    if (password !== (f.new_password2 ?? '')) return again("The two password fields didn't match.");
    if (!isStrongEnoughPassword(services.config, password)) {
      return again(`The new password is too weak: use at least ${services.config.passwords.minLength} characters that are hard to guess (not a common word, name or pattern).`);
    }
    await doResetPassword(services, realm, user, password);
    return send(reply, 200, page('Password changed', 'Your password has been changed. <a href="/login">Log in</a> with your new password.'));
  });
}
