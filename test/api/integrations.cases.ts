import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'integrations');

/** A fixture's text: test/fixtures/integrations/<integration>/<name>. */
export function fixture(integration: string, name: string): string {
  return readFileSync(join(FIXTURES, integration, name), 'utf8');
}

/**
 * Zulip's tests expect "(no topic)"; its send path (and ours) stores that name as the empty
 * topic, which GET /messages returns as "" with allow_empty_topic_name.
 */
const NO_TOPIC = '';

export interface IntegrationCase {
  integration: string;
  fixture: string;
  contentType?: string;
  headers?: Record<string, string>;
  query?: Record<string, string>;
  /** The sending client Zulip records: Zulip<webhook name>Webhook. */
  client: string;
  /** Zulip's expected_topic_name and expected_message in zerver/webhooks/<name>/tests.py. */
  topic: string;
  content: string;
}

/**
 * Each payload is from Zulip's own test fixtures (zerver/webhooks/<name>/fixtures/), or from the
 * service's documentation, with the topic and content Zulip's tests expect for it.
 */
export const INTEGRATION_CASES: IntegrationCase[] = [
  {
    integration: 'json',
    fixture: 'pingdom_http_up_to_down.json',
    client: 'ZulipJSONWebhook',
    topic: 'JSON',
    // Zulip's tests build the expectation with Python's json.dumps(fixture, indent=2); this file is its output.
    content: fixture('json', 'pingdom_http_up_to_down.expected.md'),
  },
  { integration: 'slack_incoming', fixture: 'text.json', client: 'ZulipSlackIncomingWebhook', topic: NO_TOPIC, content: 'Hello, world.' },
  {
    integration: 'slack_incoming',
    fixture: 'urlencoded_text.txt',
    contentType: 'application/x-www-form-urlencoded',
    client: 'ZulipSlackIncomingWebhook',
    topic: 'devops',
    content: ':zap: chris has started deploying project tag v0.0.2rc10 to staging',
  },
  {
    integration: 'slack_incoming',
    fixture: 'blocks.json',
    client: 'ZulipSlackIncomingWebhook',
    topic: NO_TOPIC,
    content:
      'Danny Torrence left the following review for your property:\n\n[Overlook Hotel](https://example.com) \n :star: \n Doors had too many axe holes, guest in room 237 was far too rowdy, whole place felt stuck in the 1920s.\n\n[Haunted hotel image](https://is5-ssl.mzstatic.com/image/thumb/Purple3/v4/d3/72/5c/d3725c8f-c642-5d69-1904-aa36e4297885/source/256x256bb.jpg)\n\n**Average Rating**\n1.0',
  },
  {
    integration: 'slack_incoming',
    fixture: 'attachment_fields.json',
    client: 'ZulipSlackIncomingWebhook',
    topic: NO_TOPIC,
    content:
      'Build bla bla succeeded\n\n**Requested by**: Some user\n**Duration**: 00:02:03\n**Build pipeline**: ConsumerAddressModule\n**Title without value**\nValue without title',
  },
];
