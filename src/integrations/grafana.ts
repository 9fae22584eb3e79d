import { AnomalousPayloadError, field, has, list, str, truthy, type Integration } from './types.js';

/**
 * Grafana (Zulip's zerver/webhooks/grafana): the alerting system's payload (`alerts`, Grafana 8
 * and later), one message per notification with each alert's times, labels and annotations;
 * and the legacy dashboard alerts (`ruleName`, `evalMatches`). The event type for
 * `only_events` / `exclude_events` is the status or legacy state.
 */

const alertStatus = (icon: string, state: string): string => `${icon} **${state}**\n\n`;

function oneOf(value: string, allowed: readonly string[]): string {
  if (!allowed.includes(value)) throw new AnomalousPayloadError();
  return value;
}

/** "- key: value" lines of a string-valued object. */
function keyValueLines(obj: unknown): string {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new AnomalousPayloadError();
  return Object.keys(obj).map((k) => `- ${k}: ${str(obj, k)}\n`).join('');
}

function alertingBody(p: unknown): { topic: string; body: string; eventType: string } {
  const status = oneOf(str(p, 'status'), ['firing', 'resolved']);
  const alerts = list(p, 'alerts');
  const topic = `[${status.toUpperCase()}:${alerts.length}]`;
  let body = alertStatus(status === 'firing' ? ':alert:' : ':checkbox:', status.toUpperCase());
  if (truthy(field(p, 'message'))) body += str(p, 'message') + '\n';
  alerts.forEach((alert, i) => {
    body += `\n---\n**Alert ${i + 1}**`;
    const labels = field(alert, 'labels');
    if (has(labels, 'alertname') && truthy(field(labels, 'alertname'))) body += ': ' + str(labels, 'alertname') + '.';
    body += `\n\nThis alert was fired at <time:${str(alert, 'startsAt')}>.\n`;
    const end = str(alert, 'endsAt');
    if (end !== '0001-01-01T00:00:00Z') body += `\nThis alert was resolved at <time:${end}>.\n\n`;
    if (truthy(labels)) body += `Labels:\n${keyValueLines(labels)}\n`;
    const annotations = field(alert, 'annotations');
    if (truthy(annotations)) body += `Annotations:\n${keyValueLines(annotations)}\n`;
  });
  const truncated = field(p, 'truncatedAlerts');
  if (truthy(truncated)) {
    if (typeof truncated !== 'number' || !Number.isInteger(truncated)) throw new AnomalousPayloadError();
    body += `${truncated} alert(s) truncated.\n`;
  }
  return { topic, body, eventType: status };
}

function legacyBody(p: unknown): { topic: string; body: string; eventType: string } {
  const topic = str(p, 'title');
  let evalMatches = '';
  const matches = field(p, 'evalMatches');
  if (matches !== undefined && matches !== null) {
    for (const m of list(p, 'evalMatches')) {
      const value = field(m, 'value');
      if (value !== null && typeof value !== 'number') throw new AnomalousPayloadError();
      evalMatches += `**${str(m, 'metric')}:** ${value === null ? 'None' : String(value)}\n`;
    }
  }
  const message = has(p, 'message') ? str(p, 'message') + '\n\n' : '';
  const state = oneOf(str(p, 'state'), ['no_data', 'paused', 'alerting', 'ok', 'pending', 'unknown']);
  const icon = state === 'alerting' ? ':alert:' : state === 'ok' ? ':squared_ok:' : ':info:';
  let body = `${alertStatus(icon, state.toUpperCase())}[${str(p, 'ruleName')}](${str(p, 'ruleUrl')})\n\n${message}${evalMatches}`;
  if (has(p, 'imageUrl')) body += `\n[Click to view visualization](${str(p, 'imageUrl')})`;
  return { topic, body: body.trim(), eventType: state };
}

export const grafanaIntegration: Integration = {
  name: 'grafana',
  webhookName: 'Grafana',
  jsonBody: true,
  handle(req) {
    return [has(req.payload, 'alerts') ? alertingBody(req.payload) : legacyBody(req.payload)];
  },
};
