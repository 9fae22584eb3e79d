import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { openapiDoc, ZULIP_YAML } from '../helpers/openapi.js';
import { doCreateUser } from '../../src/actions/users.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';

/**
 * Every operation zulip.yaml documents is served: called with placeholder IDs and no
 * parameters, it must reach its handler (any answer but the router's own 404). The exceptions
 * below are the operations that are not ours to serve, or are another issue's work.
 */
const EXCEPTIONS: Record<string, string> = {
  'POST /dev_fetch_api_key': "Zulip's development server only",
  'GET /dev_list_users': "Zulip's development server only",
  'POST /real-time': 'a documentation page, not an operation',
  'POST /rest-error-handling': 'a documentation page, not an operation',
  'POST /zulip-outgoing-webhook': 'a documentation page (the payload Zulip POSTs to a bot), not an operation',
  'POST /remotes/push/e2ee/register': "the push notification service's (bouncer's) API, which an organization's server calls rather than serves",
};

/** A value for each path parameter that the route's own parser accepts. */
const PLACEHOLDERS: Record<string, string> = {
  fragment: 'inbox',
  realm_id_str: '2',
  filename: 'ab/cdef/picture.png',
  user_id_or_email: '1',
  emoji_name: 'green_tick',
  domain: 'example.org',
  email: 'nobody@example.com',
};

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

function operations(): { key: string; method: string; path: string }[] {
  const doc = openapiDoc();
  if (!doc) return [];
  const out: { key: string; method: string; path: string }[] = [];
  for (const [template, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const method of Object.keys(ops).filter((m) => METHODS.includes(m))) {
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => PLACEHOLDERS[name] ?? (name.endsWith('_id') ? '1' : name));
      out.push({ key: `${method.toUpperCase()} ${template}`, method: method.toUpperCase(), path });
    }
  }
  return out;
}

const isRouterNotFound = (status: number, body: any): boolean => status === 404 && body?.code === 'NOT_FOUND' && body?.msg === 'Not Found';

forEachDatabase('every zulip.yaml operation is served', (server) => {
  test('each operation reaches a handler, except the listed ones, which do not', async (t) => {
    const ops = operations();
    if (ops.length === 0) {
      t.skip(`zulip.yaml not found at ${ZULIP_YAML}`);
      return;
    }
    const s = server();
    const missing: string[] = [];
    const servedExceptions: string[] = [];
    let n = 0;
    for (const op of ops) {
      // A fresh member per call: an operation that succeeds (deactivating oneself, a new API
      // key) must not lock the next one out.
      const user = await doCreateUser(s.app.services, s.realm, {
        email: `walker${n++}@example.com`,
        fullName: `Walker ${n}`,
        password: null,
        role: ROLE_MEMBER,
        actingUser: null,
      });
      const res = await s.clientFor(user).request(op.method, op.path);
      const notFound = isRouterNotFound(res.status, res.body);
      if (notFound && !(op.key in EXCEPTIONS)) missing.push(op.key);
      if (!notFound && op.key in EXCEPTIONS) servedExceptions.push(op.key);
    }
    assert.deepEqual(missing, [], `not served: ${missing.join(', ')}`);
    assert.deepEqual(servedExceptions, [], `served now, remove from EXCEPTIONS: ${servedExceptions.join(', ')}`);
    for (const key of Object.keys(EXCEPTIONS)) assert.ok(ops.some((o) => o.key === key), `${key} is not in zulip.yaml`);
  });
});
