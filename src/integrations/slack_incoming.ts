import { AnomalousPayloadError, field, truthy, type Integration, type WebhookRequest } from './types.js';
import { parseUrlEncoded } from '../plugins/body.js';
import { JsonableError, missingParam } from '../errors.js';
import { parseWebhookJson } from './json_body.js';

/**
 * Slack-compatible incoming webhooks (Zulip's zerver/webhooks/slack_incoming): `text`,
 * Block Kit `blocks` and legacy `attachments`, Slack's mrkdwn bold/italics and <url|text> links
 * turned into Zulip Markdown. The topic is the query's `topic`, else the payload's `channel`
 * without its leading # or @, else "(no topic)".
 */

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function checkString(v: unknown): string {
  if (typeof v !== 'string') throw new AnomalousPayloadError();
  return v;
}

function checkUrl(v: unknown): string {
  const s = checkString(v);
  try {
    new URL(s);
  } catch {
    throw new AnomalousPayloadError();
  }
  return s;
}

function joinPieces(pieces: string[]): string {
  return pieces.map((p) => p.trim()).filter((p) => p !== '').join('\n\n');
}

function textBlock(v: unknown, plainTextOnly = false): string {
  if (!isObj(v)) throw new AnomalousPayloadError();
  const types = plainTextOnly ? ['plain_text'] : ['plain_text', 'mrkdwn'];
  if (typeof v.type !== 'string' || !types.includes(v.type)) throw new AnomalousPayloadError();
  return checkString(v.text);
}

function renderBlockElement(element: unknown): string {
  if (checkString(field(element, 'type')) === 'image') {
    return `[${checkString(field(element, 'alt_text'))}](${checkUrl(field(element, 'image_url'))})`;
  }
  return '';
}

function renderBlock(block: unknown): string {
  if (!isObj(block)) throw new AnomalousPayloadError();
  const type = checkString(block.type);
  if (!['actions', 'context', 'divider', 'header', 'image', 'input', 'section'].includes(type)) throw new AnomalousPayloadError();
  if (type === 'context' && truthy(block.elements)) {
    if (!Array.isArray(block.elements)) throw new AnomalousPayloadError();
    const pieces = block.elements.map((el) => {
      const t = checkString(field(el, 'type'));
      if (!['image', 'plain_text', 'mrkdwn'].includes(t)) throw new AnomalousPayloadError();
      return t === 'image' ? renderBlockElement(el) : textBlock(el);
    });
    return joinPieces(pieces);
  }
  if (type === 'divider') return '----';
  if (type === 'header') return '## ' + textBlock(block.text, true);
  if (type === 'image') {
    const url = checkUrl(block.image_url);
    let alt = checkString(block.alt_text);
    if ('title' in block) alt = textBlock(block.title, true);
    return `[${alt}](${url})`;
  }
  if (type === 'section') {
    const pieces: string[] = [];
    if ('text' in block) pieces.push(textBlock(block.text));
    if ('accessory' in block) pieces.push(renderBlockElement(block.accessory));
    if ('fields' in block) {
      if (!Array.isArray(block.fields)) throw new AnomalousPayloadError();
      const fields = block.fields.map((f) => textBlock(f));
      if (fields.length === 1) {
        pieces.push(fields[0]!);
      } else {
        // A table cannot hold newlines or escaped pipes; Slack shows two columns without a header.
        const cells = fields.map((f) => f.replaceAll('\n', ' ').replaceAll('|', ' '));
        let table = '| | |\n|-|-|\n';
        for (let i = 0; i < cells.length; i += 2) table += `| ${cells[i]} | ${cells[i + 1] ?? ''} |\n`;
        pieces.push(table);
      }
    }
    return joinPieces(pieces);
  }
  return '';
}

function renderAttachment(a: unknown): string {
  if (!isObj(a)) throw new AnomalousPayloadError();
  const pieces: string[] = [];
  if (truthy(a.title)) {
    const title = checkString(a.title);
    pieces.push(truthy(a.title_link) ? `## [${title}](${checkUrl(a.title_link)})` : `## ${title}`);
  }
  if (truthy(a.pretext)) pieces.push(checkString(a.pretext));
  if (truthy(a.text)) pieces.push(checkString(a.text));
  if ('fields' in a) {
    if (!Array.isArray(a.fields)) throw new AnomalousPayloadError();
    const lines: string[] = [];
    for (const f of a.fields) {
      if (!isObj(f)) throw new AnomalousPayloadError();
      if ('title' in f && 'value' in f && truthy(f.title) && truthy(f.value)) lines.push(`*${checkString(f.title)}*: ${checkString(f.value)}`);
      else if (truthy(f.title)) lines.push(`*${checkString(f.title)}*`);
      else if (truthy(f.value)) lines.push(checkString(f.value));
    }
    pieces.push(lines.join('\n'));
  }
  if (truthy(a.blocks)) {
    if (!Array.isArray(a.blocks)) throw new AnomalousPayloadError();
    pieces.push(...a.blocks.map(renderBlock));
  }
  if (truthy(a.image_url)) pieces.push(`[](${checkUrl(a.image_url)})`);
  if (truthy(a.footer)) pieces.push(checkString(a.footer));
  if (truthy(a.ts)) {
    if (typeof a.ts !== 'number' || !Number.isInteger(a.ts)) throw new AnomalousPayloadError();
    pieces.push(`<time:${a.ts}>`);
  }
  return joinPieces(pieces);
}

export function replaceLinks(text: string): string {
  return text.replace(/<(\w+?:\/\/.*?)\|(.*?)>/g, '[$2]($1)');
}

/** Slack's *bold* is Zulip's **bold**; Slack's _italic_ is Zulip's *italic*. */
export function replaceFormatting(text: string): string {
  const bold = /(\W|^)\*(?!\s+)([^*\n]+)(?<!\s)\*((?=\W)|$)/gu;
  const italic = /(\W|^)_(?!\s+)([^_\n]+)(?<!\s)_((?=\W)|$)/gu;
  return text.replace(bold, '$1**$2**$3').replace(italic, '$1*$2*$3');
}

/** Slack sends JSON, or a form whose `payload` field holds the JSON. */
function slackPayload(req: WebhookRequest): unknown {
  let text: string;
  if (req.contentType === 'application/json') {
    text = req.rawBody;
  } else {
    const form = parseUrlEncoded(req.rawBody);
    const value = form.payload ?? req.query.payload;
    if (value === undefined) throw missingParam('payload');
    text = value;
  }
  return parseWebhookJson(text);
}

export const slackIncomingIntegration: Integration = {
  name: 'slack_incoming',
  webhookName: 'SlackIncoming',
  jsonBody: false,
  handle(req) {
    const payload = slackPayload(req);
    if (!isObj(payload)) throw new JsonableError('Malformed JSON', 'INVALID_JSON', 400);
    let topic = req.query.topic;
    if (topic === undefined && 'channel' in payload) topic = checkString(payload.channel).replace(/^[@#]/, '');
    topic ??= '(no topic)';
    const pieces: string[] = [];
    if (truthy(payload.blocks)) {
      if (!Array.isArray(payload.blocks)) throw new AnomalousPayloadError();
      pieces.push(...payload.blocks.map(renderBlock));
    }
    if (truthy(payload.attachments)) {
      if (!Array.isArray(payload.attachments)) throw new AnomalousPayloadError();
      pieces.push(...payload.attachments.map(renderAttachment));
    }
    let body = joinPieces(pieces);
    if (body === '' && truthy(payload.text)) {
      if (truthy(payload.icon_emoji)) body = checkString(payload.icon_emoji) + ' ';
      body += checkString(payload.text);
      body = body.trim();
    }
    if (body === '') return [];
    return [{ topic, body: replaceFormatting(replaceLinks(body).trim()) }];
  },
};
