import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { openapiDoc } from '../helpers/openapi.js';
import { ZULIP_FEATURE_LEVEL } from '../../src/version.js';

/**
 * Every POST /register key zulip.yaml documents as "Present if `T` is present in
 * `fetch_event_types`", new at or before the feature level we report, must be returned when a
 * client asks for T alone: a client that trusts the feature level must not meet missing keys.
 */

/** Keys not served yet, each with the reason; this list must only shrink. */
const NOT_YET_SERVED: Record<string, string> = {
  realm_uuid: 'no stable organization UUID is stored yet',
  onboarding_steps: 'onboarding steps (one-time notices) are not implemented',
  navigation_tour_video_url: 'onboarding steps are not implemented',
  realm_incoming_webhook_bots: 'incoming integrations come with the integrations item of issue 17',
  stop_words: 'the full-text search does not publish its stop words',
  giphy_api_key: 'no GIF provider integration',
  tenor_api_key: 'no GIF provider integration',
  klipy_api_key: 'no GIF provider integration',
};

/** Keys zulip.yaml documents as present only under a further condition than the fetch type. */
const CONDITIONAL: Record<string, string> = {
  demo_organization_scheduled_deletion_date: 'only for demo organizations, which Parley does not create',
};

interface DocumentedKey {
  key: string;
  fetchType: string;
  featureLevel: number;
}

function documentedKeys(): DocumentedKey[] | null {
  const doc = openapiDoc();
  if (!doc) return null;
  const schema = doc.paths['/register'].post.responses['200'].content['application/json'].schema;
  const props: Record<string, { description?: string }> = {};
  const walk = (s: any): void => {
    if (!s || typeof s !== 'object') return;
    if (s.properties) Object.assign(props, s.properties);
    for (const k of ['allOf', 'oneOf', 'anyOf']) for (const x of s[k] ?? []) walk(x);
  };
  walk(schema);
  const out: DocumentedKey[] = [];
  for (const [key, prop] of Object.entries(props)) {
    const text = (prop.description ?? '').replace(/\s+/g, ' ');
    const m = /Present if `(\w+)` is present in `fetch_event_types`/.exec(text);
    if (!m) continue;
    const levels = [...text.matchAll(/New in Zulip [\d.]+ \(feature level (\d+)\)/g)].map((x) => Number(x[1]));
    out.push({ key, fetchType: m[1]!, featureLevel: levels.length ? Math.min(...levels) : 0 });
  }
  return out;
}

forEachDatabase('register fetch_event_types', (server) => {
  test('every fetch_event_types value the feature level promises returns its keys', async (t) => {
    const documented = documentedKeys();
    if (!documented) {
      t.skip('zulip.yaml is not available (set ZULIP_OPENAPI_YAML or place ../shared beside the project)');
      return;
    }
    const promised = documented.filter((d) => d.featureLevel <= ZULIP_FEATURE_LEVEL);
    const byType = new Map<string, string[]>();
    for (const d of promised) byType.set(d.fetchType, [...(byType.get(d.fetchType) ?? []), d.key]);
    assert.ok(byType.has('scheduled_messages') && byType.has('reminders') && byType.has('channel_folders'));
    const missing: string[] = [];
    const served: string[] = [];
    for (const [type, keys] of byType) {
      const body = ok(await server().cast.hamlet.client.post('/register', { fetch_event_types: [type] }));
      for (const key of keys) {
        if (key in body) served.push(key);
        else if (!(key in NOT_YET_SERVED) && !(key in CONDITIONAL)) missing.push(`${key} (fetch type ${type})`);
      }
    }
    assert.deepEqual(missing, [], 'keys the feature level promises but register does not return');
    // An exception that is served now must leave the list.
    assert.deepEqual(served.filter((k) => k in NOT_YET_SERVED || k in CONDITIONAL), []);
  });

  test('scheduled_messages, reminders and channel_folders come back when asked for, and only then', async () => {
    const { hamlet } = server().cast;
    const body = ok(await hamlet.client.post('/register', { fetch_event_types: ['scheduled_messages', 'reminders', 'channel_folders'] }));
    assert.deepEqual(body.scheduled_messages, []);
    assert.deepEqual(body.reminders, []);
    assert.ok(Array.isArray(body.channel_folders));
    const other = ok(await hamlet.client.post('/register', { fetch_event_types: ['message'] }));
    for (const key of ['scheduled_messages', 'reminders', 'channel_folders']) assert.equal(key in other, false, key);
  });
});
