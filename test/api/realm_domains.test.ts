import { fetchActiveUserIds } from '../../src/db/repos/users.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { domainProblem, emailAllowedForRealm, realmEmailValidator } from '../../src/actions/realm_domains.js';
import { fetchRealmById, updateRealmRow } from '../../src/db/repos/realms.js';

test('domainProblem follows Zulip validate_domain', () => {
  for (const bad of ['', 'test', 't.', 'test.', '.com', '-test', 'test...com', 'test-', 'test_domain.com', 'test.-domain.com', `${'a'.repeat(255)}.com`]) {
    assert.notEqual(domainProblem(bad), null, bad);
  }
  for (const good of ['acme.com', 'x-x.y.3.z']) assert.equal(domainProblem(good), null, good);
});

async function setRestricted(s: TestServer, on: boolean) {
  const db = s.app.services.db.kysely;
  const realm = (await fetchRealmById(db, s.realm.id))!;
  await updateRealmRow(db, realm.id, { settings: JSON.stringify({ ...JSON.parse(realm.settings), emails_restricted_to_domains: on }) });
  return (await fetchRealmById(db, s.realm.id))!;
}

forEachDatabase('allowed domains', (server) => {
  test('POST /realm/domains (owners) normalizes and adds a domain, announced to every user', async () => {
    const s = server();
    const allUsers = (await fetchActiveUserIds(s.app.services.db.kysely, s.realm.id)).sort((a, b) => a - b);
    const { result, events } = await captureEvents(s, () => s.cast.owner.client.post('/realm/domains', { domain: ' Acme.COM ', allow_subdomains: false }));
    const body = ok(result);
    assertConforms(result, 'POST', '/realm/domains');
    assert.equal(typeof body.new_domain[0], 'number');
    assert.equal(body.new_domain[1], 'acme.com');
    assert.deepEqual(events.map((e) => e.event), [{ type: 'realm_domains', op: 'add', realm_domain: { domain: 'acme.com', allow_subdomains: false } }]);
    assert.deepEqual(recipientIds(events[0]!), allUsers);
    assertEventConforms(events[0]!.event);

    ok(await s.cast.owner.client.post('/realm/domains', { domain: 'beta.org', allow_subdomains: true }));
    // Any member, even a guest, may list them, in creation order.
    const list = await s.cast.guest.client.get('/realm/domains');
    assertConforms(list, 'GET', '/realm/domains');
    assert.deepEqual(ok(list).domains, [
      { domain: 'acme.com', allow_subdomains: false },
      { domain: 'beta.org', allow_subdomains: true },
    ]);
    err(await s.cast.owner.client.post('/realm/domains', { domain: 'acme.com', allow_subdomains: true }), 400, 'BAD_REQUEST', 'The domain acme.com is already a part of your organization.');
    err(await s.cast.owner.client.post('/realm/domains', { domain: '', allow_subdomains: true }), 400, 'BAD_REQUEST', "Invalid domain: Domain can't be empty.");
    err(await s.cast.owner.client.post('/realm/domains', { domain: 'no_dot', allow_subdomains: true }), 400, 'BAD_REQUEST', 'Invalid domain: Domain must have at least one dot (.)');
    err(await s.cast.owner.client.post('/realm/domains', { domain: 'x.com', allow_subdomains: 'sure' }), 400, 'BAD_REQUEST', 'allow_subdomains is not a boolean');
    const missing = err(await s.cast.owner.client.post('/realm/domains', { domain: 'x.com' }), 400, 'REQUEST_VARIABLE_MISSING');
    assert.equal(missing.var_name, 'allow_subdomains');
  });

  test('only owners may add, change or remove domains', async () => {
    const s = server();
    for (const who of [s.cast.admin, s.cast.moderator, s.cast.hamlet, s.cast.guest]) {
      err(await who.client.post('/realm/domains', {}), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
      err(await who.client.patch('/realm/domains/acme.com', { allow_subdomains: true }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
      err(await who.client.delete('/realm/domains/acme.com'), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    }
  });

  test('PATCH /realm/domains/{domain} changes allow_subdomains with a change event; unknown domains are refused', async () => {
    const s = server();
    ok(await s.cast.owner.client.post('/realm/domains', { domain: 'gamma.net', allow_subdomains: false }));
    const { result, events } = await captureEvents(s, () => s.cast.owner.client.patch('/realm/domains/gamma.net', { allow_subdomains: true }));
    ok(result);
    assertConforms(result, 'PATCH', '/realm/domains/{domain}');
    assert.deepEqual(events.map((e) => e.event), [{ type: 'realm_domains', op: 'change', realm_domain: { domain: 'gamma.net', allow_subdomains: true } }]);
    assertEventConforms(events[0]!.event);
    const listed = ok(await s.cast.hamlet.client.get('/realm/domains')).domains.find((d: { domain: string }) => d.domain === 'gamma.net');
    assert.equal(listed.allow_subdomains, true);
    err(await s.cast.owner.client.patch('/realm/domains/non-existent.com', { allow_subdomains: true }), 400, 'BAD_REQUEST', 'No entry found for domain non-existent.com.');
    err(await s.cast.owner.client.patch('/realm/domains/gamma.net', {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'allow_subdomains' argument");
  });

  test('DELETE /realm/domains/{domain} removes it with a remove event', async () => {
    const s = server();
    ok(await s.cast.owner.client.post('/realm/domains', { domain: 'delta.io', allow_subdomains: false }));
    const { result, events } = await captureEvents(s, () => s.cast.owner.client.delete('/realm/domains/delta.io'));
    ok(result);
    assertConforms(result, 'DELETE', '/realm/domains/{domain}');
    assert.deepEqual(events.map((e) => e.event), [{ type: 'realm_domains', op: 'remove', domain: 'delta.io' }]);
    assertEventConforms(events[0]!.event);
    err(await s.cast.owner.client.delete('/realm/domains/delta.io'), 400, 'BAD_REQUEST', 'No entry found for domain delta.io.');
  });

  test('emailAllowedForRealm enforces the domains only when emails are restricted to them', async () => {
    const s = server();
    const db = s.app.services.db.kysely;
    ok(await s.cast.owner.client.post('/realm/domains', { domain: 'test1.com', allow_subdomains: false }));
    ok(await s.cast.owner.client.post('/realm/domains', { domain: 'test2.test1.org', allow_subdomains: true }));
    let realm = await setRestricted(s, false);
    assert.equal(await emailAllowedForRealm(db, realm, 'anyone@elsewhere.net'), null);
    assert.equal(await emailAllowedForRealm(db, realm, 'a+b@elsewhere.net'), null);

    realm = await setRestricted(s, true);
    const check = await realmEmailValidator(db, realm);
    assert.equal(check('user@test1.com'), null);
    assert.equal(check('user@TEST1.com'), null);
    assert.equal(check('user@sub.test1.com'), 'Outside your domain.');
    assert.equal(check('user@test2.test1.org'), null);
    assert.equal(check('user@deep.test2.test1.org'), null);
    assert.equal(check('user@test1.org'), 'Outside your domain.');
    assert.equal(check('user@elsewhere.net'), 'Outside your domain.');
    assert.equal(check('user+tag@test1.com'), 'Email addresses containing + are not allowed.');

    ok(await s.cast.owner.client.patch('/realm/domains/test1.com', { allow_subdomains: true }));
    assert.equal(await emailAllowedForRealm(db, realm, 'user@sub.test1.com'), null);
    await setRestricted(s, false);
  });

  test('removing the last allowed domain lifts the restriction to allowed domains', async () => {
    const s = server();
    const owner = s.cast.owner.client;
    ok(await owner.post('/realm/domains', { domain: 'last-one.com', allow_subdomains: false }));
    await setRestricted(s, true);
    const domains: { domain: string }[] = ok(await owner.get('/realm/domains')).domains;
    for (const { domain } of domains.filter((d) => d.domain !== 'last-one.com')) {
      const { events } = await captureEvents(s, () => owner.delete(`/realm/domains/${domain}`));
      assert.deepEqual(events.map((e) => e.event.type), ['realm_domains']);
    }
    const { result, events } = await captureEvents(s, () => owner.delete('/realm/domains/last-one.com'));
    ok(result);
    assert.deepEqual(events.map((e) => e.event), [
      { type: 'realm_domains', op: 'remove', domain: 'last-one.com' },
      { type: 'realm', op: 'update', property: 'emails_restricted_to_domains', value: false },
    ]);
    for (const e of events) assertEventConforms(e.event);
    const realm = (await fetchRealmById(s.app.services.db.kysely, s.realm.id))!;
    assert.equal(JSON.parse(realm.settings).emails_restricted_to_domains ?? false, false);
    assert.deepEqual(ok(await owner.get('/realm/domains')).domains, []);
  });
});
