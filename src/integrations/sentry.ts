import { AnomalousPayloadError, UnsupportedEventError, field, has, list, str, truthy, type Integration, type WebhookMessage } from './types.js';

/**
 * Sentry (Zulip's zerver/webhooks/sentry): internal-integration payloads (`data.event` for
 * exception and message events, `data.issue` for issue created/resolved/assigned/ignored), plain
 * webhook payloads (turned into the same shape), and the deprecated legacy-plugin payload.
 */

const SYNTAX_HIGHLIGHT_AS: Record<string, string> = { go: 'go', java: 'java', javascript: 'javascript', node: 'javascript', python: 'python3', ruby: 'ruby' };

/** Sentry's timestamps as Zulip prints them: seconds precision, a space for the T. */
const printedTime = (iso: string): string => iso.split('.')[0]!.replaceAll('T', ' ');

function tracebackLines(lines: unknown): string {
  if (lines === undefined || lines === null) return '';
  return list(lines).map((l) => (l === '' ? '\n' : `     ${str(l)}\n`)).join('');
}

/** A Python-style string for a JSON value printed with format(). */
function pyStr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  return String(v);
}

function eventMessage(event: unknown): WebhookMessage {
  const title = str(event, 'title');
  const platform = str(event, 'platform');
  const highlight = SYNTAX_HIGHLIGHT_AS[platform] ?? '';
  const isSample = field(event, 'title') === 'This is an example Python exception';
  // Zulip refuses the deprecated Raven Python SDKs (event version below 7), except Sentry's sample event.
  if (platform === 'python' && Number.parseInt(pyStr(field(event, 'version')), 10) < 7 && !isSample) throw new UnsupportedEventError('Raven SDK');
  const level = pyStr(field(event, 'level'));
  const webLink = pyStr(field(event, 'web_url'));
  const datetime = printedTime(str(event, 'datetime'));
  if (has(event, 'exception')) {
    const filename = field(event, 'metadata', 'filename') ?? null;
    let stacktrace: unknown = null;
    for (const value of [...list(event, 'exception', 'values')].reverse()) {
      if (has(value, 'stacktrace')) {
        stacktrace = field(value, 'stacktrace');
        break;
      }
    }
    if (truthy(stacktrace) && truthy(filename)) {
      const frame = [...list(stacktrace, 'frames')].reverse().find((f) => (field(f, 'filename') ?? null) === filename);
      if (frame && has(frame, 'context_line') && field(frame, 'context_line') !== null) {
        const body =
          `\n**New exception:** [${title}](${webLink})\n\`\`\`quote\n**level:** ${level}\n**timestamp:** ${datetime}\n**filename:** ${pyStr(filename)}\n\`\`\`\n` +
          `\nTraceback:\n\`\`\`${highlight}\n${tracebackLines(field(frame, 'pre_context'))}---> ${str(frame, 'context_line')}\n${tracebackLines(field(frame, 'post_context'))}\`\`\`\n`;
        return { topic: title, body };
      }
    }
    return { topic: title, body: `\n**New exception:** [${title}](${webLink})\n\`\`\`quote\n**level:** ${level}\n**timestamp:** ${datetime}\n**filename:** ${pyStr(filename)}\n\`\`\`\n` };
  }
  if (has(event, 'logentry')) {
    return { topic: title, body: `\n**New message event:** [${title}](${webLink})\n\`\`\`quote\n**level:** ${level}\n**timestamp:** ${datetime}\n\`\`\`\n` };
  }
  throw new UnsupportedEventError('unknown-event type');
}

function issueMessage(action: string, issue: unknown, actor: unknown): WebhookMessage {
  const title = str(issue, 'title');
  const assignedTo = field(issue, 'assignedTo');
  const assignee = truthy(assignedTo) ? (field(assignedTo, 'type') === 'team' ? `team ${pyStr(field(assignedTo, 'name'))}` : pyStr(field(assignedTo, 'name'))) : 'No one';
  let body: string;
  if (action === 'created') {
    body = `\n**New issue created:** ${title}\n\`\`\`quote\n**level:** ${pyStr(field(issue, 'level'))}\n**timestamp:** ${printedTime(str(issue, 'lastSeen'))}\n**assignee:** ${assignee}\n\`\`\`\n`;
  } else if (action === 'resolved') {
    body = `\nIssue **${title}** was marked as resolved by **${pyStr(field(actor, 'name'))}**.\n`;
  } else if (action === 'assigned') {
    body = `\nIssue **${title}** has now been assigned to **${assignee}** by **${pyStr(field(actor, 'name'))}**.\n`;
  } else if (action === 'ignored') {
    body = `\nIssue **${title}** was ignored by **${pyStr(field(actor, 'name'))}**.\n`;
  } else {
    throw new UnsupportedEventError('unknown-issue-action type');
  }
  return { topic: title, body };
}

/** A plain-webhook payload carries the event without the URL and time fields; Zulip derives them. */
function transformWebhookPayload(payload: Record<string, unknown>): Record<string, unknown> | null {
  const event = field(payload, 'event');
  const eventId = field(event, 'event_id');
  if (!truthy(eventId)) return null;
  const e = event as Record<string, unknown>;
  try {
    e.web_url = new URL(`events/${pyStr(eventId)}/`, str(payload, 'url')).href;
  } catch {
    throw new AnomalousPayloadError();
  }
  const timestamp = e.timestamp ?? e.received;
  if (typeof timestamp !== 'number') throw new AnomalousPayloadError();
  e.datetime = new Date(Math.floor(timestamp) * 1000).toISOString().replace(/\.\d+Z$/, '') + '.000000+00:00';
  return payload;
}

export const sentryIntegration: Integration = {
  name: 'sentry',
  webhookName: 'Sentry',
  jsonBody: true,
  handle(req) {
    const payload = req.payload;
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw new AnomalousPayloadError();
    const p = payload as Record<string, unknown>;
    let data = p.data === undefined ? null : p.data;
    if (data === null) data = transformWebhookPayload(p);
    if (truthy(data)) {
      if (has(data, 'event')) return [eventMessage(field(data, 'event'))];
      if (has(data, 'issue')) return [issueMessage(str(p, 'action'), field(data, 'issue'), field(p, 'actor'))];
      throw new UnsupportedEventError(`[${Object.keys(data as object).map((k) => `'${k}'`).join(', ')}]`);
    }
    const level = str(p, 'level').toUpperCase();
    return [{ topic: pyStr(p.project_name), body: `\nNew [issue](${pyStr(p.url)}) (level: ${level}):\n\n\`\`\` quote\n${pyStr(p.message)}\n\`\`\`\n` }];
  },
};
