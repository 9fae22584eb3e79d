import { readFileSync, statSync, createReadStream } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import { PROJECT_ROOT } from '../../lib/project_files.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import { JsonableError } from '../../errors.js';
import { escapeHtml } from '../../lib/html.js';
import { realmUrl } from '../../lib/urls.js';
import { desktopFlowEncrypt, otpEncryptApiKey, validateOtpParams } from '../../lib/otp.js';
import { checkFetchApiKey } from '../../actions/auth.js';
import { fetchUserById } from '../../db/repos/users.js';
import { checkCanAuthenticate } from '../../plugins/auth.js';
import { checkCsrf, createLoginToken, endSession, ensureCsrfCookie, redeemLoginToken, sessionUser, startSession } from '../../plugins/session.js';
import { requestRealm } from '../endpoint.js';
import { createMailer } from '../../lib/email.js';
import { notifyNewLogin } from '../../actions/password_reset.js';
import { checkTwoFactorLogin, doStartTwoFactorLogin, type LoginTarget } from '../../actions/two_factor.js';
import type { Realm, User } from '../../db/tables.js';

/** web/dist, built by `npm run build` (scripts/build.mjs). */
export const WEB_DIST = join(PROJECT_ROOT, 'web', 'dist') + sep;
/** Vite's `base`: every built asset is below it, with a content hash in its name. */
const ASSET_PREFIX = '/static/app/';

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.ttf': 'font/ttf',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.map': 'application/json',
};

/**
 * The app's one HTML page, read on every request (it is under a kilobyte) so that a rebuild
 * is served at once, never a page naming assets the rebuild removed.
 */
function shell(page: 'index' | 'login'): string | null {
  try {
    return readFileSync(join(WEB_DIST, `${page}.html`), 'utf8');
  } catch {
    return null;
  }
}

export const html = (reply: FastifyReply, status: number, body: string) =>
  reply.code(status).header('Cache-Control', 'no-store').type('text/html; charset=utf-8').send(body);

export const messagePage = (title: string, text: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}</style></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p><p><a href="/login">Log in</a></p></body></html>`;

function sendShell(services: Services, req: FastifyRequest, reply: FastifyReply, which: 'index' | 'login'): FastifyReply {
  const csrf = ensureCsrfCookie(services, req);
  if (csrf) reply.header('Set-Cookie', csrf);
  const page = shell(which);
  if (page === null) return html(reply, 503, messagePage('Web app not built', 'Run `npm run build` to build the web app, then restart the server.'));
  return html(reply, 200, page);
}

/** Zulip's get_safe_redirect_to: only a path on this server, never another host. */
export function safeNext(next: string | undefined): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/';
  return next;
}

function query(req: FastifyRequest): Record<string, string> {
  return (req.query ?? {}) as Record<string, string>;
}

function form(req: FastifyRequest): Record<string, string> {
  return req.body && typeof req.body === 'object' ? (req.body as Record<string, string>) : {};
}

/**
 * The browser side of Parley: the web app's shell and assets, and the pages a browser signs in
 * and out through (Zulip's /login, /accounts/login/ with the mobile and desktop app flows, and
 * /accounts/logout/).
 */
export function registerWebRoutes(app: FastifyInstance, services: Services): void {
  const mailer = createMailer(services.config, services.log);
  app.addHook('onClose', async () => mailer.close());
  app.get(`${ASSET_PREFIX}*`, async (req: FastifyRequest<{ Params: { '*': string } }>, reply) => {
    const rel = normalize(req.params['*']);
    const file = join(WEB_DIST, rel);
    // Only the built assets: not the pages (served at their routes) nor the build's stamp.
    if (!rel.startsWith(`assets${sep}`) || !file.startsWith(WEB_DIST) || rel.split(sep).includes('..')) throw new JsonableError('Not Found', 'NOT_FOUND', 404);
    let size: number;
    try {
      const st = statSync(file);
      if (!st.isFile()) throw new Error('not a file');
      size = st.size;
    } catch {
      throw new JsonableError('Not Found', 'NOT_FOUND', 404);
    }
    // Names carry a content hash (Vite), so a browser may keep them for good.
    return reply
      .header('Content-Type', CONTENT_TYPES[extname(file)] ?? 'application/octet-stream')
      .header('Content-Length', String(size))
      .header('Cache-Control', 'public, max-age=31536000, immutable')
      .send(createReadStream(file));
  });

  app.get('/', async (req, reply) => {
    const realm = await requestRealm(services, req);
    const user = await sessionUser(services, realm, req);
    if (!user || !user.is_active || realm.deactivated) return reply.redirect('/login');
    return sendShell(services, req, reply, 'index');
  });

  for (const path of ['/login', '/accounts/login']) {
    app.get(path, async (req, reply) => {
      const realm = await requestRealm(services, req);
      const q = query(req);
      try {
        validateOtpParams(q.mobile_flow_otp, q.desktop_flow_otp);
      } catch (e) {
        if (!(e instanceof JsonableError)) throw e;
        return html(reply, 400, messagePage('Invalid login link', `${e.message}. Start logging in again from the app.`));
      }
      const user = await sessionUser(services, realm, req);
      const appFlow = q.mobile_flow_otp !== undefined || q.desktop_flow_otp !== undefined;
      if (user && user.is_active && !realm.deactivated && !appFlow) return reply.redirect(safeNext(q.next));
      return sendShell(services, req, reply, 'login');
    });
  }

  // The login form's submission, answered in JSON so the page can show errors in place.
  app.post('/accounts/login', async (req, reply) => {
    const realm = await requestRealm(services, req);
    await services.rateLimiter.checkApi(req, reply, null);
    checkCsrf(req);
    const f = form(req);
    const mobileFlowOtp = f.mobile_flow_otp || undefined;
    const desktopFlowOtp = f.desktop_flow_otp || undefined;
    validateOtpParams(mobileFlowOtp, desktopFlowOtp);
    if (!f.username) throw new JsonableError('Missing username', 'REQUEST_VARIABLE_MISSING', 400, { var_name: 'username' });
    if (!f.password) throw new JsonableError('Missing password', 'REQUEST_VARIABLE_MISSING', 400, { var_name: 'password' });
    const user = await checkFetchApiKey(services, realm, f.username, f.password);
    const target: LoginTarget = { mobileFlowOtp, desktopFlowOtp, next: safeNext(f.next) };
    // Zulip's two-factor login (TWO_FACTOR_AUTHENTICATION_ENABLED): the password was right; the
    // session, or the app's key, waits for the second step. fetch_api_key is not gated, as in Zulip.
    const pending = await doStartTwoFactorLogin(services, realm, user, target);
    if (pending) {
      services.log.info({ realm: realm.id, user: user.id, enrol: pending.enrolment !== null }, 'login: second factor asked');
      return { result: 'success', msg: '', two_factor_required: true, two_factor_token: pending.token, enrolment: pending.enrolment };
    }
    return finishLogin(req, reply, realm, user, target);
  });

  /** A complete login: the apps' one-time-pad flows, or a browser session. */
  const finishLogin = async (req: FastifyRequest, reply: FastifyReply, realm: Realm, user: User, target: LoginTarget) => {
    notifyNewLogin(services, mailer, realm, user, { userAgent: req.headers['user-agent'] ?? '', ip: req.ip });
    if (target.mobileFlowOtp) {
      // Zulip's create_response_for_otp_flow: the app's pad encrypts the key; no browser session.
      const params = new URLSearchParams({
        otp_encrypted_api_key: otpEncryptApiKey(user.api_key, target.mobileFlowOtp),
        email: user.delivery_email,
        user_id: String(user.id),
        realm: realmUrl(services.config, realm),
      });
      return { result: 'success', msg: '', redirect_to: `zulip://login?${params.toString()}` };
    }
    if (target.desktopFlowOtp) {
      const token = await createLoginToken(services, user);
      return { result: 'success', msg: '', desktop_data: desktopFlowEncrypt(token, target.desktopFlowOtp), browser_url: '/login' };
    }
    reply.header('Set-Cookie', await startSession(services, user));
    return { result: 'success', msg: '', redirect_to: target.next };
  };

  // The second step of a login with two-factor authentication: the first step's token and a
  // code from the app (or a recovery code); with an enrolment, the new recovery codes come back.
  app.post('/accounts/login/two_factor', async (req, reply) => {
    const realm = await requestRealm(services, req);
    await services.rateLimiter.checkApi(req, reply, null);
    checkCsrf(req);
    const f = form(req);
    if (!f.code) throw new JsonableError('Missing code', 'REQUEST_VARIABLE_MISSING', 400, { var_name: 'code' });
    const { user, target, recoveryCodes } = await checkTwoFactorLogin(services, realm, f.two_factor_token ?? '', f.code);
    checkCanAuthenticate(realm, user);
    services.log.info({ realm: realm.id, user: user.id, method: 'password+two_factor' }, 'login');
    const out = await finishLogin(req, reply, realm, user, target);
    return recoveryCodes ? { ...out, recovery_codes: recoveryCodes } : out;
  });

  // Zulip's log_into_subdomain: the desktop app opens this with the token it decrypted.
  app.get('/accounts/login/subdomain/:token', async (req: FastifyRequest<{ Params: { token: string } }>, reply) => {
    const realm = await requestRealm(services, req);
    await services.rateLimiter.checkApi(req, reply, null);
    const userId = await redeemLoginToken(services, req.params.token);
    const user = userId === null ? undefined : await fetchUserById(services.db.kysely, realm.id, userId);
    if (!user) return html(reply, 400, messagePage('Invalid login token', 'This login token is invalid, used or expired. Log in again.'));
    checkCanAuthenticate(realm, user);
    reply.header('Set-Cookie', await startSession(services, user));
    return reply.redirect('/');
  });

  app.post('/accounts/logout', async (req, reply) => {
    await requestRealm(services, req);
    checkCsrf(req);
    reply.header('Set-Cookie', await endSession(services, req));
    return { result: 'success', msg: '' };
  });
}
