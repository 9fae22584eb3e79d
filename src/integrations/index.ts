import type { Integration } from './types.js';
import { jsonIntegration } from './json.js';
import { slackIncomingIntegration } from './slack_incoming.js';
import { githubIntegration } from './github.js';

/** Every incoming integration, served at /api/v1/external/<name> (docs/integrations.md). */
export const INTEGRATIONS: ReadonlyMap<string, Integration> = new Map(
  [jsonIntegration, slackIncomingIntegration, githubIntegration].map((i) => [i.name, i]),
);
