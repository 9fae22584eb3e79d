import type { Integration } from './types.js';
import { pythonJsonDumps } from './python_json.js';

/** Zulip's generic JSON integration (zerver/webhooks/json): the payload, pretty-printed in a code block. */
export const jsonIntegration: Integration = {
  name: 'json',
  webhookName: 'JSON',
  jsonBody: true,
  handle(req) {
    return [{ topic: 'JSON', body: '```json\n' + pythonJsonDumps(req.payload) + '\n```' }];
  },
};
