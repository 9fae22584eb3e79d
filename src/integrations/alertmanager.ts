import { AnomalousPayloadError, field, list, str, type Integration } from './types.js';

/**
 * Prometheus Alertmanager (Zulip's zerver/webhooks/alertmanager): alerts grouped into one topic
 * per value of the `name` label or annotation (query `name`, default "instance"), each described
 * by the `desc` one (default "alertname"), firing and resolved alerts in separate messages.
 */

/** A label, else the annotation of that name, else the fallback. */
function labelOrAnnotation(alert: unknown, name: string, fallback: string): string {
  const labels = field(alert, 'labels') ?? {};
  const annotations = field(alert, 'annotations') ?? {};
  if (field(labels, name) !== undefined) return str(labels, name);
  if (field(annotations, name) !== undefined) return str(annotations, name);
  return fallback;
}

export const alertmanagerIntegration: Integration = {
  name: 'alertmanager',
  webhookName: 'Alertmanager',
  jsonBody: true,
  handle(req) {
    const nameField = req.query.name ?? 'instance';
    const descField = req.query.desc ?? 'alertname';
    const topics = new Map<string, { firing: string[]; resolved: string[] }>();
    for (const alert of list(req.payload, 'alerts')) {
      const name = labelOrAnnotation(alert, nameField, '(unknown)');
      const desc = labelOrAnnotation(alert, descField, `<missing field: ${descField}>`);
      const url = str(alert, 'generatorURL').replaceAll('tab=1', 'tab=0');
      const status = str(alert, 'status');
      if (status !== 'firing' && status !== 'resolved') throw new AnomalousPayloadError();
      let entry = topics.get(name);
      if (!entry) topics.set(name, (entry = { firing: [], resolved: [] }));
      entry[status].push(`${desc} ([source](${url}))`);
    }
    const out = [];
    for (const [topic, statuses] of topics) {
      for (const status of ['firing', 'resolved'] as const) {
        const messages = statuses[status];
        if (messages.length === 0) continue;
        const [icon, title] = status === 'firing' ? [':alert:', 'FIRING'] : [':squared_ok:', 'Resolved'];
        const body = messages.length === 1 ? `${icon} **${title}** ${messages[0]}` : `${icon} **${title}**\n${messages.map((m) => `* ${m}`).join('\n')}`;
        out.push({ topic, body });
      }
    }
    return out;
  },
};
