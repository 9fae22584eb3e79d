import type { Integration } from './types.js';
import { jsonIntegration } from './json.js';
import { slackIncomingIntegration } from './slack_incoming.js';
import { githubIntegration } from './github.js';
import { alertmanagerIntegration } from './alertmanager.js';
import { grafanaIntegration } from './grafana.js';
import { sentryIntegration } from './sentry.js';
import { gitlabIntegration } from './gitlab.js';
import { jiraIntegration } from './jira.js';
import { iftttIntegration } from './ifttt.js';

/** Every incoming integration, served at /api/v1/external/<name> (docs/integrations.md). */
export const INTEGRATIONS: ReadonlyMap<string, Integration> = new Map(
  [jsonIntegration, slackIncomingIntegration, githubIntegration, alertmanagerIntegration, grafanaIntegration, sentryIntegration, gitlabIntegration, jiraIntegration, iftttIntegration].map((i) => [i.name, i]),
);
