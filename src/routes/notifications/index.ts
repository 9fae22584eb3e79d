import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { doChangeUserSettings } from '../../actions/user_settings.js';
import { fetchUserById } from '../../db/repos/users.js';
import { escapeHtml } from '../../lib/html.js';
import { unsubscribeTokenUser } from '../../lib/missed_message_email.js';
import type { Services } from '../../services.js';
import { requestRealm } from '../endpoint.js';

const page = (reply: FastifyReply, status: number, title: string, text: string) =>
  reply
    .code(status)
    .header('Cache-Control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>` +
        `<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}</style></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></body></html>`,
    );

/** Zulip's email_unsubscribers: the setting each kind of link turns off. */
const UNSUBSCRIBE_TYPES: Record<string, { setting: 'enable_offline_email_notifications' | 'enable_digest_emails'; what: string }> = {
  missed_messages: { setting: 'enable_offline_email_notifications', what: 'missed message emails' },
  digest: { setting: 'enable_digest_emails', what: 'digest emails' },
};

/**
 * Zulip's email_unsubscribe for missed-message and digest emails: the signed link of each email (GET, and
 * POST for RFC 8058 one-click List-Unsubscribe) turns that kind of email off.
 */
export function registerNotificationRoutes(app: FastifyInstance, services: Services): void {
  const unsubscribe = async (req: FastifyRequest<{ Params: { type: string; token: string } }>, reply: FastifyReply) => {
    const realm = await requestRealm(services, req);
    const kind = Object.hasOwn(UNSUBSCRIBE_TYPES, req.params.type) ? UNSUBSCRIBE_TYPES[req.params.type] : undefined;
    const userId = kind ? await unsubscribeTokenUser(services, req.params.type, req.params.token) : null;
    const user = userId === null ? undefined : await fetchUserById(services.db.kysely, realm.id, userId);
    if (!kind || !user) return page(reply, 400, 'Unknown email unsubscribe request', 'This unsubscribe link is not valid.');
    await doChangeUserSettings(services, realm, user, { settings: { [kind.setting]: false } }, user);
    return page(reply, 200, 'Email settings updated', `You will no longer receive ${kind.what} from ${realm.name}. You can turn them back on in your notification settings.`);
  };
  app.get('/accounts/unsubscribe/:type/:token', unsubscribe);
  app.post('/accounts/unsubscribe/:type/:token', unsubscribe);
}
