import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import { JsonableError } from '../../errors.js';
import { escapeHtml } from '../../lib/html.js';
import { realmUrl } from '../../lib/urls.js';
import { desktopFlowEncrypt, otpEncryptApiKey, validateOtpParams } from '../../lib/otp.js';
import { accessOidcProvider, checkOidcCallback, doStartOidcLogin } from '../../actions/oidc.js';
import { checkCanAuthenticate } from '../../plugins/auth.js';
import { cookieValue, createLoginToken, startSession } from '../../plugins/session.js';
import { notifyNewLogin } from '../../actions/password_reset.js';
import { requestRealm } from '../endpoint.js';
import { createMailer } from '../../lib/email.js';
import { html, messagePage, safeNext } from './index.js';

/** Holds the state of the one login in progress, so a callback URL made for someone else's browser fails (login CSRF). */
const STATE_COOKIE = 'parley_oidc_state';
/** Zulip's callback path for its OpenID Connect backend (python-social-auth's /complete/<backend>/). */
const CALLBACK_PATH = '/complete/oidc/';

const stateCookie = (services: Services, value: string, maxAge: number): string =>
  `${STATE_COOKIE}=${value}; Path=${CALLBACK_PATH}; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${services.config.externalUrl.startsWith('https:') ? '; Secure' : ''}`;

/** Zulip's desktop_redirect page: the token the desktop app decrypts with its pad, to copy into the app. */
const desktopTokenPage = (data: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Finish logging in</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}input{width:100%;box-sizing:border-box;font:inherit;padding:.4rem}</style></head><body><h1>Finish logging in</h1>
<p>Copy this login token and return to your Zulip app to finish logging in:</p><input readonly aria-label="Login token" value="${escapeHtml(data)}" onfocus="this.select()"><p>You may then close this window.</p></body></html>`;

/**
 * Single sign-on with OpenID Connect (Zulip's social auth with its GenericOpenIdConnectBackend):
 * the buttons' login and signup URLs start an authorization code flow with the provider, and
 * the provider's callback finishes it into a browser session, or into the mobile or desktop
 * app's one-time-pad flow. Both pages count against the per-address request budget.
 */
export function registerOidcRoutes(app: FastifyInstance, services: Services): void {
  if (!services.config.oidc.length) return;
  const mailer = createMailer(services.config, services.log);
  app.addHook('onClose', async () => mailer.close());

  const refusal = (reply: FastifyReply, e: unknown) => {
    if (!(e instanceof JsonableError)) throw e;
    if (e.code === 'RATE_LIMIT_HIT') throw e;
    return html(reply, e.httpStatus, messagePage('Login failed', e.message));
  };

  for (const kind of ['login', 'register']) {
    app.get(`/accounts/${kind}/social/oidc/:key`, async (req: FastifyRequest<{ Params: { key: string }; Querystring: Record<string, string> }>, reply) => {
      const realm = await requestRealm(services, req);
      await services.rateLimiter.checkApi(req, reply, null);
      const q = req.query ?? {};
      try {
        validateOtpParams(q.mobile_flow_otp, q.desktop_flow_otp);
        const idp = accessOidcProvider(services, realm, req.params.key);
        const redirectUri = new URL(CALLBACK_PATH, realmUrl(services.config, realm)).href;
        const start = await doStartOidcLogin(services, realm, idp, redirectUri, {
          mobileFlowOtp: q.mobile_flow_otp || undefined,
          desktopFlowOtp: q.desktop_flow_otp || undefined,
          next: safeNext(q.next),
        });
        reply.header('Set-Cookie', stateCookie(services, start.state, 600));
        return reply.redirect(start.url);
      } catch (e) {
        return refusal(reply, e);
      }
    });
  }

  app.get(CALLBACK_PATH, async (req, reply) => {
    const realm = await requestRealm(services, req);
    await services.rateLimiter.checkApi(req, reply, null);
    reply.header('Set-Cookie', stateCookie(services, '', 0));
    try {
      const callbackUrl = new URL(req.url, realmUrl(services.config, realm));
      const { user, target, provider } = await checkOidcCallback(services, realm, callbackUrl, cookieValue(req, STATE_COOKIE));
      checkCanAuthenticate(realm, user);
      services.log.info({ realm: realm.id, user: user.id, method: 'oidc', provider }, 'login');
      notifyNewLogin(services, mailer, realm, user, { userAgent: req.headers['user-agent'] ?? '', ip: req.ip });
      if (target.mobileFlowOtp) {
        // Zulip's finish_mobile_flow: the app's pad encrypts the key; no browser session.
        const params = new URLSearchParams({
          otp_encrypted_api_key: otpEncryptApiKey(user.api_key, target.mobileFlowOtp),
          email: user.delivery_email,
          user_id: String(user.id),
          realm: realmUrl(services.config, realm),
        });
        return reply.redirect(`zulip://login?${params.toString()}`);
      }
      if (target.desktopFlowOtp) {
        const token = await createLoginToken(services, user);
        return html(reply, 200, desktopTokenPage(desktopFlowEncrypt(token, target.desktopFlowOtp)));
      }
      reply.header('Set-Cookie', [stateCookie(services, '', 0), await startSession(services, user)]);
      return reply.redirect(target.next);
    } catch (e) {
      return refusal(reply, e);
    }
  });
}
