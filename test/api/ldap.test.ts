import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Attribute, Change, Client } from 'ldapts';
import { OWNER_EMAIL, PASSWORD, startServer, testDatabases, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { LDAP_ADMIN_DN, LDAP_ADMIN_PASSWORD, LDAP_SUFFIX, PEOPLE_OU, personLdif, slapdSkipReason, startSlapd, type Slapd } from '../helpers/slapd.js';
import { fetchUserByDeliveryEmail } from '../../src/db/repos/users.js';
import { updateRealmRow } from '../../src/db/repos/realms.js';
import { realmSettings } from '../../src/lib/realm_settings.js';
import { ROLE_MODERATOR } from '../../src/lib/roles.js';
import type { LdapConfig } from '../../src/config.js';
import { main } from '../../src/cli/main.js';
import { captureEvents } from '../helpers/bus.js';

/** A 1x1 PNG, stored as alice's jpegPhoto (Zulip sniffs the type, as we do). */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

const DIRECTORY =
  PEOPLE_OU +
  personLdif({ uid: 'hamlet', cn: 'King Hamlet', sn: 'Hamlet', mail: 'hamlet@example.com', password: 'hamlet directory pw' }) +
  personLdif({ uid: 'alice', cn: 'Alice Adams', sn: 'Adams', mail: 'alice@example.com', password: 'alice directory pw' }).replace(
    /\n\n$/,
    `\njpegPhoto:: ${PNG.toString('base64')}\ntelephoneNumber: +1 555 0100\n\n`,
  ) +
  personLdif({ uid: 'erin', cn: 'Erin Evans', sn: 'Evans', mail: 'erin@example.com', password: 'erin directory pw', employeeType: 'FALSE' }) +
  personLdif({ uid: 'carol', cn: 'Carol Disabled', sn: 'Disabled', mail: 'carol@example.com', password: 'carol directory pw', employeeType: 'TRUE' }) +
  personLdif({ uid: 'dave', cn: 'Dave Nomail', sn: 'Nomail', password: 'dave directory pw' });

function ldapConfig(url: string): LdapConfig {
  return {
    url,
    startTls: false,
    tlsVerify: true,
    bindDn: LDAP_ADMIN_DN,
    bindPassword: LDAP_ADMIN_PASSWORD,
    userSearchBase: `ou=people,${LDAP_SUFFIX}`,
    userSearchFilter: '(uid=%(user)s)',
    userDnTemplate: null,
    appendDomain: null,
    emailAttr: 'mail',
    usernameAttr: 'uid',
    attrMap: { full_name: 'cn', avatar: 'jpegPhoto', deactivated: 'employeeType', custom_profile_field__phone: 'telephoneNumber' },
    deactivateNonMatching: true,
    syncIntervalMinutes: 0,
    timeoutMs: 2000,
  };
}

/** A browser's cookies, enough for the login form (CSRF cookie, then the session). */
async function webLogin(s: TestServer, username: string, password: string): Promise<{ status: number; body: Record<string, unknown>; session: boolean }> {
  const page = await fetch(`${s.url}/login`);
  const csrf = page.headers.getSetCookie().map((c) => c.split(';')[0]!).find((c) => c.startsWith('csrftoken='))!;
  const res = await fetch(`${s.url}/accounts/login`, {
    method: 'POST',
    headers: { Cookie: csrf, 'X-CSRFToken': csrf.split('=')[1]!, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username, password }).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, session: res.headers.getSetCookie().some((c) => c.startsWith('parley_session=')) };
}

/** `npx parley sync-ldap` in this process, against the test server's database and directory. */
async function syncLdap(s: TestServer, slapd: Slapd): Promise<{ code: number; out: string; err: string }> {
  const saved = process.env;
  const out: string[] = [];
  const errs: string[] = [];
  process.env = {
    PATH: saved.PATH ?? '',
    PARLEY_ENV_FILE: '/nonexistent',
    DATABASE_URL: s.config.databaseUrl,
    PARLEY_DATA_DIR: s.config.dataDir,
    PARLEY_LDAP_URL: slapd.url,
    PARLEY_LDAP_BIND_DN: LDAP_ADMIN_DN,
    PARLEY_LDAP_BIND_PASSWORD: LDAP_ADMIN_PASSWORD,
    PARLEY_LDAP_USER_SEARCH_BASE: `ou=people,${LDAP_SUFFIX}`,
    PARLEY_LDAP_EMAIL_ATTR: 'mail',
    PARLEY_LDAP_USER_ATTR_MAP: 'full_name=cn,avatar=jpegPhoto,deactivated=employeeType,custom_profile_field__phone=telephoneNumber',
    PARLEY_LDAP_DEACTIVATE_NON_MATCHING: 'on',
    PARLEY_LDAP_TIMEOUT_MS: '2000',
  };
  try {
    const code = await main(['node', 'parley', 'sync-ldap'], { out: (t) => out.push(t), err: (t) => errs.push(t) });
    return { code, out: out.join(''), err: errs.join('') };
  } finally {
    process.env = saved;
  }
}

async function directoryAdmin(slapd: Slapd, fn: (c: Client) => Promise<void>): Promise<void> {
  const c = new Client({ url: slapd.url });
  await c.bind(LDAP_ADMIN_DN, LDAP_ADMIN_PASSWORD);
  try {
    await fn(c);
  } finally {
    await c.unbind();
  }
}

const person = (uid: string) => `uid=${uid},ou=people,${LDAP_SUFFIX}`;

for (const kind of testDatabases()) {
  describe(`LDAP directory logins [${kind}]`, { skip: slapdSkipReason }, () => {
    let slapd: Slapd;
    let s: TestServer;
    before(async () => {
      slapd = await startSlapd(DIRECTORY);
      s = await startServer(kind, { ldap: ldapConfig(slapd.url) });
      ok(await s.cast.owner.client.post('/realm/profile_fields', { name: 'Phone', field_type: 1 }));
    });
    after(async () => {
      await s?.close();
      await slapd?.close();
    });

    const fetchKey = (username: string, password: string) => s.anonymous.post('/fetch_api_key', { username, password });

    test('server_settings: ldap on, usernames need not be emails (an email attribute is set)', async () => {
      const body = ok(await s.anonymous.get('/server_settings'));
      assert.equal((body.authentication_methods as Record<string, boolean>).ldap, true);
      assert.equal((body.authentication_methods as Record<string, boolean>).email, true);
      assert.equal(body.require_email_format_usernames, false);
      const reg = ok(await s.cast.hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
      assert.deepEqual(reg.realm_authentication_methods, { Email: { enabled: true, available: true }, LDAP: { enabled: true, available: true } });
    });

    test('authentication_methods in PATCH /realm: owners only, known methods, never none and never none the owner can use', async () => {
      const owner = s.cast.owner.client;
      const methods = (m: Record<string, boolean>) => ({ authentication_methods: JSON.stringify(m) });
      err(await s.cast.admin.client.patch('/realm', methods({ LDAP: false })), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
      err(await owner.patch('/realm', methods({ Email: false, LDAP: false })), 400, 'BAD_REQUEST', 'At least one authentication method must be enabled.');
      err(await owner.patch('/realm', methods({ GitHub: true })), 400, 'BAD_REQUEST', 'Invalid authentication method: GitHub');
      // The owner has a Parley password but no directory entry: switching passwords off would lock them out.
      err(await owner.patch('/realm', methods({ Email: false })), 400, 'BAD_REQUEST', 'You would not be able to log in with any enabled authentication method; keep one you can use enabled.');

      const { result, events } = await captureEvents(s, () => owner.patch('/realm', methods({ LDAP: false })));
      assert.deepEqual(ok(result).authentication_methods, { Email: true, LDAP: false });
      assert.deepEqual(
        events.map((e) => e.event),
        [{ type: 'realm', op: 'update_dict', property: 'default', data: { authentication_methods: { Email: { enabled: true, available: true }, LDAP: { enabled: false, available: true } } } }],
      );
      const settings = ok(await s.anonymous.get('/server_settings'));
      assert.deepEqual([settings.authentication_methods.ldap, settings.require_email_format_usernames], [false, true]);
      // The directory is no longer asked: hamlet's directory password fails, his Parley password works.
      err(await fetchKey('hamlet', 'hamlet directory pw'), 401, 'AUTHENTICATION_FAILED');
      assert.equal(ok(await fetchKey('hamlet@example.com', PASSWORD)).user_id, s.cast.hamlet.user.id);

      // An owner in the directory may switch passwords off; then only the directory lets anyone in.
      ok(await owner.patch(`/users/${s.cast.hamlet.user.id}`, { role: 100 }));
      ok(await s.cast.hamlet.client.patch('/realm', methods({ LDAP: true, Email: false })));
      assert.equal(ok(await s.anonymous.get('/server_settings')).email_auth_enabled, false);
      err(await fetchKey(OWNER_EMAIL, PASSWORD), 401, 'AUTHENTICATION_FAILED', 'Your username or password is incorrect');
      assert.equal(ok(await fetchKey('hamlet', 'hamlet directory pw')).user_id, s.cast.hamlet.user.id);
      ok(await s.cast.hamlet.client.patch('/realm', methods({ Email: true })));
      ok(await owner.patch(`/users/${s.cast.hamlet.user.id}`, { role: 400 }));
      assert.equal(ok(await fetchKey(OWNER_EMAIL, PASSWORD)).email, OWNER_EMAIL);
    });

    test('a directory person logs in by directory username and by email; their Parley password no longer works', async () => {
      const hamlet = s.cast.hamlet.user;
      const byName = ok(await fetchKey('hamlet', 'hamlet directory pw'));
      assert.deepEqual([byName.api_key, byName.user_id], [hamlet.api_key, hamlet.id]);
      assert.equal(ok(await fetchKey('hamlet@example.com', 'hamlet directory pw')).user_id, hamlet.id);
      err(await fetchKey('hamlet@example.com', PASSWORD), 401, 'AUTHENTICATION_FAILED', 'Your username or password is incorrect');
      // Someone the directory does not know still uses Parley's password.
      assert.equal(ok(await fetchKey(OWNER_EMAIL, PASSWORD)).email, OWNER_EMAIL);
    });

    test('wrong password, unknown user, empty password: 401 AUTHENTICATION_FAILED', async () => {
      err(await fetchKey('hamlet', 'wrong'), 401, 'AUTHENTICATION_FAILED', 'Your username or password is incorrect');
      err(await fetchKey('nobody', 'whatever'), 401, 'AUTHENTICATION_FAILED', 'Your username or password is incorrect');
      err(await fetchKey('nobody@example.com', 'whatever'), 401, 'AUTHENTICATION_FAILED', 'Your username or password is incorrect');
      // An LDAP simple bind without a password is an anonymous bind; it must not count as a login.
      err(await s.anonymous.post('/fetch_api_key', { username: 'hamlet', password: '' }), 401, 'AUTHENTICATION_FAILED');
    });

    test('a person disabled in the directory is refused as deactivated; one without email gets a clear refusal', async () => {
      err(await fetchKey('carol', 'carol directory pw'), 401, 'USER_DEACTIVATED', 'Account is deactivated');
      err(await fetchKey('carol', 'wrong'), 401, 'AUTHENTICATION_FAILED', 'Your username or password is incorrect');
      err(await fetchKey('dave', 'dave directory pw'), 401, 'AUTHENTICATION_FAILED', 'Your directory account has no email address. Ask your administrator to add one.');
      assert.equal(await fetchUserByDeliveryEmail(s.app.services.db.kysely, s.realm.id, 'carol@example.com'), undefined);
    });

    test('first login creates the account under the sign-up rules: an invitation gives the role; without invitations required anyone may join', async () => {
      const db = s.app.services.db.kysely;
      assert.equal(realmSettings(s.realm).invite_required, true);
      err(await fetchKey('alice', 'alice directory pw'), 401, 'AUTHENTICATION_FAILED', 'You need an invitation to join this organization. Ask an administrator to invite you.');
      assert.equal(await fetchUserByDeliveryEmail(db, s.realm.id, 'alice@example.com'), undefined);

      ok(await s.cast.owner.client.post('/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'directory people' }]) }));
      const streamId = ok(await s.cast.owner.client.get('/get_stream_id', { stream: 'directory people' })).stream_id as number;
      ok(await s.cast.owner.client.post('/invites', { invitee_emails: 'erin@example.com', stream_ids: JSON.stringify([streamId]), invite_as: ROLE_MODERATOR }));
      const erin = ok(await fetchKey('erin', 'erin directory pw'));
      const erinRow = (await fetchUserByDeliveryEmail(db, s.realm.id, 'erin@example.com'))!;
      assert.deepEqual([erinRow.id, erinRow.full_name, erinRow.role, erinRow.password_hash], [erin.user_id, 'Erin Evans', ROLE_MODERATOR, null]);
      const subs = ok(await s.clientFor(erinRow).get('/users/me/subscriptions')).subscriptions as { stream_id: number }[];
      assert.deepEqual(subs.map((x) => x.stream_id), [streamId]);
      const invites = ok(await s.cast.owner.client.get('/invites')).invites as { email: string }[];
      assert.equal(invites.some((i) => i.email === 'erin@example.com'), false);

      ok(await s.cast.owner.client.patch('/realm', { invite_required: false }));
      const web = await webLogin(s, 'alice', 'alice directory pw');
      assert.equal(web.status, 200);
      assert.equal(web.body.result, 'success');
      assert.equal(web.session, true);
      const alice = (await fetchUserByDeliveryEmail(db, s.realm.id, 'alice@example.com'))!;
      assert.deepEqual([alice.full_name, alice.password_hash, alice.avatar_source], ['Alice Adams', null, 'U']);
      const me = ok(await s.clientFor(alice).get(`/users/${alice.id}`, { include_custom_profile_fields: true })).user as { profile_data: Record<string, { value: string }> };
      assert.deepEqual(Object.values(me.profile_data).map((v) => v.value), ['+1 555 0100']);
      // The web form by email, and a wrong password there.
      assert.equal((await webLogin(s, 'alice@example.com', 'alice directory pw')).session, true);
      const wrong = await webLogin(s, 'alice', 'nope');
      assert.deepEqual([wrong.status, wrong.body.code, wrong.session], [401, 'AUTHENTICATION_FAILED', false]);
    });

    test('sync-ldap: a changed name follows, a disabled person is deactivated and reactivated, a removed one deactivated', async () => {
      const db = s.app.services.db.kysely;
      await directoryAdmin(slapd, async (c) => {
        await c.modify(person('hamlet'), new Change({ operation: 'replace', modification: new Attribute({ type: 'cn', values: ['Prince Hamlet'] }) }));
        await c.modify(person('erin'), new Change({ operation: 'replace', modification: new Attribute({ type: 'employeeType', values: ['TRUE'] }) }));
        await c.del(person('alice'));
      });
      const first = await syncLdap(s, slapd);
      assert.equal(first.code, 0, first.err);
      // Not in the directory: alice and the cast other than hamlet (owner, iago, shiva, othello, polonius).
      assert.deepEqual(JSON.parse(first.out), { updated: 1, deactivated: 7, reactivated: 0, missing: 6 });
      const row = (email: string) => fetchUserByDeliveryEmail(db, s.realm.id, email);
      assert.equal((await row('hamlet@example.com'))!.full_name, 'Prince Hamlet');
      assert.equal((await row('erin@example.com'))!.is_active, 0);
      assert.equal((await row('alice@example.com'))!.is_active, 0);
      err(await fetchKey('erin', 'erin directory pw'), 401, 'USER_DEACTIVATED');

      await directoryAdmin(slapd, (c) => c.modify(person('erin'), new Change({ operation: 'replace', modification: new Attribute({ type: 'employeeType', values: ['FALSE'] }) })));
      const second = await syncLdap(s, slapd);
      assert.deepEqual(JSON.parse(second.out), { updated: 0, deactivated: 0, reactivated: 1, missing: 6 });
      assert.equal((await row('erin@example.com'))!.is_active, 1);
      ok(await fetchKey('erin', 'erin directory pw'));
    });

    test('directory down: a clear 503 error, never a login, never a 500; sync changes nothing', async () => {
      await slapd.stop();
      try {
        err(await fetchKey('hamlet', 'hamlet directory pw'), 503, 'AUTHENTICATION_FAILED', 'The directory service (LDAP) cannot be reached, so logging in is not possible right now. Try again later.');
        err(await fetchKey('hamlet@example.com', PASSWORD), 503, 'AUTHENTICATION_FAILED');
        const web = await webLogin(s, 'hamlet', 'hamlet directory pw');
        assert.deepEqual([web.status, web.body.code, web.session], [503, 'AUTHENTICATION_FAILED', false]);
        const sync = await syncLdap(s, slapd);
        assert.equal(sync.code, 1);
        assert.match(sync.err, /^Error: The directory cannot be reached \(.*\); nothing was changed\n$/);
        assert.equal((await fetchUserByDeliveryEmail(s.app.services.db.kysely, s.realm.id, 'hamlet@example.com'))!.is_active, 1);
      } finally {
        await slapd.start();
      }
      ok(await fetchKey('hamlet', 'hamlet directory pw'));
    });

    test('a deactivated organization refuses directory logins and creates nobody', async () => {
      const db = s.app.services.db.kysely;
      await updateRealmRow(db, s.realm.id, { deactivated: 1 });
      try {
        err(await fetchKey('hamlet', 'hamlet directory pw'), 401, 'REALM_DEACTIVATED');
      } finally {
        await updateRealmRow(db, s.realm.id, { deactivated: 0 });
      }
    });
  });
}
