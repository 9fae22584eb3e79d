import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { JsonableError } from '../../errors.js';
import type { Services } from '../../services.js';
import { parseAnchor } from '../../lib/narrow/anchor.js';
import { fetchMessagesForNarrow, matchMessagesToNarrow } from '../../lib/narrow/fetch.js';
import { decodeNarrowParam } from '../../lib/narrow/terms.js';
import { realmUrl } from '../../lib/urls.js';
import { endpoint } from '../endpoint.js';
import { p, zInt } from '../params.js';

const nonNegative = zInt.min(0);

/** `narrow` as clients send it; JSON null means no narrow, as in Zulip. */
const narrowParam = () => p.custom((raw, name) => (raw.trim() === 'null' ? [] : decodeNarrowParam(raw, name)));

/** GET /messages and GET /messages/matches_narrow. */
export function registerMessageFetchRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'GET',
    path: '/messages',
    params: {
      anchor: p.str().optional(),
      anchor_date: p.str().optional(),
      include_anchor: p.bool().default(true),
      num_before: p.int(nonNegative).default(0),
      num_after: p.int(nonNegative).default(0),
      narrow: narrowParam().default([]),
      use_first_unread_anchor: p.bool().default(false),
      client_gravatar: p.bool().default(true).alias('client_extavatar'),
      apply_markdown: p.bool().default(true),
      allow_empty_topic_name: p.bool().default(false),
      message_ids: p.json(z.array(nonNegative)).nullable().optional(),
    },
    handler: async ({ params, realm, user, services: s }) => {
      const messageIds = params.message_ids ?? null;
      if (
        messageIds !== null &&
        (params.num_before || params.num_after || params.anchor !== undefined || params.use_first_unread_anchor)
      ) {
        const names = ['num_before', 'num_after', 'anchor', 'message_ids', 'include_anchor', 'use_first_unread_anchor'].join(', ');
        throw new JsonableError(`Unsupported parameter combination: ${names}`, 'BAD_REQUEST', 400, { parameters: names });
      }
      const result = await fetchMessagesForNarrow(s.db, realm, realmUrl(s.config, realm), user, {
        narrow: params.narrow,
        anchor: messageIds === null ? parseAnchor(params.anchor, params.use_first_unread_anchor, params.anchor_date) : null,
        messageIds,
        includeAnchor: messageIds === null ? params.include_anchor : false,
        numBefore: params.num_before,
        numAfter: params.num_after,
        applyMarkdown: params.apply_markdown,
        clientGravatar: params.client_gravatar,
        allowEmptyTopicName: params.allow_empty_topic_name,
      });
      return { ...result };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/messages/matches_narrow',
    params: {
      msg_ids: p.intList(),
      narrow: narrowParam(),
    },
    handler: async ({ params, realm, user, services: s }) => ({
      messages: await matchMessagesToNarrow(s.db, realm, user, params.msg_ids, params.narrow),
    }),
  });
}
