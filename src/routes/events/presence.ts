import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../services.js';
import { badRequest } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { doUpdateUserPresence, fetchPresenceResponse } from '../../actions/presence.js';
import { checkSendMessageEditTypingNotification, checkSendStreamTypingNotification, checkSendTypingNotification } from '../../actions/typing.js';
import { fetchUserPresenceRow } from '../../db/repos/presence.js';
import { accessUserByEmail, accessUserById } from '../../lib/access/users.js';
import { formatSingleUserPresence } from '../../lib/format/presence.js';
import { emojiCodeToNames } from '../../lib/markdown/emoji.js';
import { SERVER_EMOJI_DATA_PATH } from '../../events/state/presence.js';

let emojiDocument: { body: string; etag: string } | undefined;

function emojiData(): { body: string; etag: string } {
  if (!emojiDocument) {
    const body = JSON.stringify({ code_to_names: emojiCodeToNames() });
    emojiDocument = { body, etag: `"${createHash('sha1').update(body).digest('hex').slice(0, 16)}"` };
  }
  return emojiDocument;
}

export function registerPresenceRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/presence',
    params: {
      status: p.str(),
      new_user_input: p.bool().default(false),
      ping_only: p.bool().default(false),
      slim_presence: p.bool().default(false),
      last_update_id: p.int().optional(),
      history_limit_days: p.int(z.number().int().min(0)).optional(),
    },
    handler: async ({ params, realm, user }) => {
      if (params.status !== 'active' && params.status !== 'idle') throw badRequest(`Invalid status: ${params.status}`);
      await doUpdateUserPresence(services, realm, user, params.status, Math.floor(Date.now() / 1000));
      if (params.ping_only) return {};
      // Passing last_update_id is how a client asks for the modern format.
      return fetchPresenceResponse(services.db.kysely, realm, {
        modern: params.slim_presence || params.last_update_id !== undefined,
        lastUpdateId: params.last_update_id,
        historyLimitDays: params.history_limit_days,
      });
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/realm/presence',
    params: {},
    handler: async ({ realm }) => {
      const { presences, server_timestamp } = await fetchPresenceResponse(services.db.kysely, realm, { modern: false });
      return { presences, server_timestamp };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/users/:user_id_or_email/presence',
    params: { user_id_or_email: p.str() },
    handler: async ({ params, realm, user }) => {
      const db = services.db.kysely;
      const key = params.user_id_or_email;
      const opts = { allowBots: true, allowDeactivated: true, forAdmin: false };
      const target = /^\d+$/.test(key)
        ? await accessUserById(db, realm, user, Number(key), opts)
        : await accessUserByEmail(db, services.config, realm, user, key, opts);
      if (!target.is_active) throw badRequest('No such user');
      if (target.is_bot) throw badRequest('Presence is not supported for bot users.');
      const row = await fetchUserPresenceRow(db, target.id);
      if (!row) throw badRequest(`No presence data for ${key}`);
      const now = Date.now() / 1000;
      return { presence: formatSingleUserPresence(row, Math.floor(now)), server_timestamp: now };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/typing',
    params: {
      // "private" is what older clients send; Zulip renamed it "direct" at feature level 174.
      type: p.str(z.enum(['direct', 'private', 'stream', 'channel'])).default('direct'),
      op: p.str(z.enum(['start', 'stop'])),
      to: p.intList().optional(),
      stream_id: p.int().optional(),
      topic: p.str().optional(),
    },
    handler: async ({ params, realm, user }) => {
      const op = params.op === 'start' ? 'start' : 'stop';
      if (params.type === 'stream' || params.type === 'channel') {
        if (params.stream_id === undefined) throw badRequest('Missing channel ID');
        if (params.topic === undefined) throw badRequest('Missing topic');
        await checkSendStreamTypingNotification(services, realm, user, params.stream_id, params.topic, op);
        return {};
      }
      if (params.to === undefined) throw badRequest("Missing 'to' argument");
      await checkSendTypingNotification(services, realm, user, params.to, op);
      return {};
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/messages/:message_id/typing',
    params: { message_id: p.int(), op: p.str(z.enum(['start', 'stop'])) },
    handler: async ({ params, realm, user }) => {
      await checkSendMessageEditTypingNotification(services, realm, user, params.message_id, params.op === 'start' ? 'start' : 'stop');
      return {};
    },
  });

  // The emoji name data behind server_emoji_data_url: public, like Zulip's static files.
  app.get(SERVER_EMOJI_DATA_PATH, async (req, reply) => {
    const { body, etag } = emojiData();
    reply.header('etag', etag).header('cache-control', 'public, max-age=86400');
    if (req.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.code(200).header('content-type', 'application/json; charset=utf-8').send(body);
  });
}
