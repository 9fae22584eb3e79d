import { badRequest } from '../errors.js';
import { field, type Integration } from './types.js';

/**
 * Zulip's IFTTT integration, its generic "send a message" webhook: the JSON body's `topic`
 * (or the older `subject`) and `content` are posted as they are. Services that can only fill
 * in a JSON template (IFTTT, Zapier's webhooks, home-made scripts) use it.
 */
export const iftttIntegration: Integration = {
  name: 'ifttt',
  webhookName: 'IFTTT',
  jsonBody: true,
  handle(req) {
    const p = req.payload;
    let topic = field(p, 'topic') ?? null;
    if (topic === null) {
      topic = field(p, 'subject') ?? null;
      if (topic === null) throw badRequest("Topic can't be empty");
    }
    const content = field(p, 'content') ?? null;
    if (content === null) throw badRequest("Content can't be empty");
    if (typeof topic !== 'string' || typeof content !== 'string') throw badRequest('Malformed payload');
    return [{ topic, body: content }];
  },
};
