import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { loopbackSmtp } from '../helpers/smtp.js';
import { loadConfig } from '../../src/config.js';
import { fetchUserByEmail } from '../../src/db/repos/users.js';

/** Every message the server sends, as received by a real SMTP server on loopback. */
const { url: smtpUrl, inbox } = await loopbackSmtp();
const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });

function linkFor(email: string): string {
  const mail = [...inbox].reverse().find((m) => m.to === email);
  assert.ok(mail, `no email to ${email}`);
  const m = /(http:\/\/\S+\/join\/[A-Za-z0-9_-]+\/)/.exec(mail.mail.text ?? '');
  assert.ok(m, `no link in email to ${email}`);
  return m[1]!;
}

/** The server's own path for a link whose host is the external URL. */
const joinUrl = (s: TestServer, link: string): string => `${s.url}${new URL(link).pathname}`;

async function join(s: TestServer, link: string, form: Record<string, string>): Promise<Response> {
  return fetch(joinUrl(s, link), { method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
}

async function streamId(s: TestServer, name: string): Promise<number> {
  const created = ok(await s.cast.owner.client.post('/users/me/subscriptions', { subscriptions: [{ name }] }));
  assert.ok(created);
  return ok(await s.cast.owner.client.get('/get_stream_id', { stream: name })).stream_id;
}

async function dmsBetween(s: TestServer, client: TestServer['cast']['owner']['client'], otherEmail: string): Promise<any[]> {
  const body = ok(await client.get('/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [{ operator: 'dm', operand: otherEmail }], apply_markdown: false }));
  return body.messages;
}

forEachDatabase('invitations', (server) => {
  test('POST /invites sends a real email whose link creates the account with the invited role, channels and groups', async () => {
    const s = server();
    const channel = await streamId(s, 'invited-channel');
    const defaultChannel = await streamId(s, 'default-channel');
    ok(await s.cast.owner.client.post('/default_streams', { stream_id: defaultChannel }));
    const group = ok(await s.cast.hamlet.client.post('/user_groups/create', { name: 'newcomers', description: '', members: [] })).group_id;
    const { result, events } = await captureEvents(s, () =>
      s.cast.hamlet.client.post('/invites', {
        invitee_emails: 'Ophelia <ophelia@example.com>\nlaertes@example.com',
        stream_ids: [channel],
        group_ids: [group],
        invite_as: 400,
        include_realm_default_subscriptions: false,
      }),
    );
    ok(result);
    assertConforms(result, 'POST', '/invites');
    const changed = events.find((e) => e.event.type === 'invites_changed')!;
    assert.ok(recipientIds(changed).includes(s.cast.hamlet.user.id));
    assert.ok(recipientIds(changed).includes(s.cast.admin.user.id));
    assert.ok(!recipientIds(changed).includes(s.cast.othello.user.id));

    const listed = await s.cast.hamlet.client.get('/invites');
    assertConforms(listed, 'GET', '/invites');
    const mine = ok(listed).invites.filter((i: any) => ['ophelia@example.com', 'laertes@example.com'].includes(i.email));
    assert.equal(mine.length, 2);
    assert.equal(mine[0].invited_by_user_id, s.cast.hamlet.user.id);
    assert.equal(mine[0].is_multiuse, false);
    assert.ok(mine[0].expiry_date > mine[0].invited + 14400 * 60 - 5);
    // Others' invitations are not listed to members, but are to administrators.
    assert.equal(ok(await s.cast.othello.client.get('/invites')).invites.filter((i: any) => i.email === 'ophelia@example.com').length, 0);
    assert.equal(ok(await s.cast.admin.client.get('/invites')).invites.filter((i: any) => i.email === 'ophelia@example.com').length, 1);

    const link = linkFor('ophelia@example.com');
    const form = await fetch(joinUrl(s, link));
    assert.equal(form.status, 200);
    assert.match(await form.text(), /ophelia@example\.com/);
    const created = await join(s, link, { full_name: 'Ophelia', password: 'a sturdy password' });
    // The new account ends logged in, in the web app.
    assert.equal(created.status, 302, await created.clone().text());
    assert.equal(created.headers.get('location'), '/');
    assert.match(created.headers.get('set-cookie') ?? '', /parley_session=/);

    const ophelia = (await fetchUserByEmail(s.app.services.db.kysely, s.realm.id, 'ophelia@example.com'))!;
    assert.equal(ophelia.role, 400);
    const key = ok(await s.anonymous.post('/fetch_api_key', { username: 'ophelia@example.com', password: 'a sturdy password' })).api_key;
    const client = s.clientFor({ ...ophelia, api_key: key });
    const subs = ok(await client.get('/users/me/subscriptions')).subscriptions.map((x: any) => x.stream_id);
    assert.deepEqual(subs, [channel], 'invited channel only: the default channel was not asked for');
    assert.equal(ok(await client.get(`/user_groups/${group}/members/${ophelia.id}`)).is_user_group_member, true);

    // The inviter asked (by default) to hear about it from Notification Bot.
    const notices = await dmsBetween(s, s.cast.hamlet.client, `notification-bot@localhost`);
    assert.ok(notices.some((m) => m.content.includes(`@_**Ophelia|${ophelia.id}** accepted your invitation`)), JSON.stringify(notices));
    // Welcome Bot greets the new user.
    assert.ok((await dmsBetween(s, client, 'welcome-bot@localhost')).length >= 1);

    // A used link cannot be used again.
    assert.equal((await fetch(joinUrl(s, link))).status, 404);
    assert.equal((await join(s, link, { full_name: 'Again', password: 'a sturdy password' })).status, 404);
  });

  test('the spec rules and errors of POST /invites', async () => {
    const s = server();
    const inv = (client: TestServer['cast']['owner']['client'], params: Record<string, unknown>) =>
      client.post('/invites', { stream_ids: [], ...params });
    err(await inv(s.cast.guest.client, { invitee_emails: 'g1@example.com' }), 400, 'BAD_REQUEST', 'Not allowed for guest users');
    err(await inv(s.cast.bot.client, { invitee_emails: 'b1@example.com' }), 400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');
    err(await inv(s.cast.hamlet.client, { invitee_emails: '' }), 400, 'BAD_REQUEST', 'You must specify at least one email address.');
    err(await s.cast.hamlet.client.post('/invites', { invitee_emails: 'x@example.com' }), 400, 'REQUEST_VARIABLE_MISSING');
    err(await inv(s.cast.hamlet.client, { invitee_emails: 'c1@example.com', stream_ids: [987654] }), 400, 'BAD_REQUEST', 'Invalid channel ID 987654. No invites were sent.');
    err(await inv(s.cast.hamlet.client, { invitee_emails: 'c2@example.com', group_ids: [987654] }), 400, 'BAD_REQUEST', 'Invalid user group');
    err(await inv(s.cast.hamlet.client, { invitee_emails: 'c3@example.com', invite_as: 500 }), 400, 'BAD_REQUEST');
    // Equal or stricter roles only: a moderator may invite moderators, not administrators.
    err(await inv(s.cast.moderator.client, { invitee_emails: 'm1@example.com', invite_as: 200 }), 400, 'BAD_REQUEST', 'Insufficient permission');
    ok(await inv(s.cast.moderator.client, { invitee_emails: 'm2@example.com', invite_as: 300 }));
    err(await inv(s.cast.hamlet.client, { invitee_emails: 'm3@example.com', invite_as: 300 }), 400, 'BAD_REQUEST', 'Insufficient permission');
    err(await inv(s.cast.admin.client, { invitee_emails: 'm4@example.com', invite_as: 100 }), 400, 'BAD_REQUEST', 'Insufficient permission');
    ok(await inv(s.cast.owner.client, { invitee_emails: 'm5@example.com', invite_as: 100 }));
    ok(await inv(s.cast.hamlet.client, { invitee_emails: 'never@example.com', invite_expires_in_minutes: null }));
    const never = ok(await s.cast.hamlet.client.get('/invites')).invites.find((i: any) => i.email === 'never@example.com');
    assert.equal(never.expiry_date, null);
    // An administrator's custom welcome text is bounded by 8000 code points.
    err(await inv(s.cast.admin.client, { invitee_emails: 'w1@example.com', welcome_message_custom_text: '😀'.repeat(8001) }), 400, 'BAD_REQUEST');
    ok(await inv(s.cast.admin.client, { invitee_emails: 'w2@example.com', welcome_message_custom_text: '😀'.repeat(8000) }));
    // Members who may not subscribe others must send an empty stream_ids.
    ok(await s.cast.owner.client.patch('/realm', { can_add_subscribers_group: { new: ok(await s.cast.owner.client.get('/user_groups')).user_groups.find((g: any) => g.name === 'role:administrators').id } }));
    const channel = await streamId(s, 'restricted-adds');
    err(await inv(s.cast.hamlet.client, { invitee_emails: 'r1@example.com', stream_ids: [channel] }), 400, 'BAD_REQUEST', 'You do not have permission to subscribe other users to channels.');
    ok(await inv(s.cast.hamlet.client, { invitee_emails: 'r2@example.com', stream_ids: [] }));
  });

  test('INVITATION_FAILED reports existing accounts while inviting the others', async () => {
    const s = server();
    ok(await s.cast.owner.client.delete(`/users/${s.cast.othello.user.id}`));
    try {
      const res = await s.cast.hamlet.client.post('/invites', {
        invitee_emails: `${s.cast.hamlet.user.delivery_email}, ${s.cast.othello.user.delivery_email}, fresh@example.com, not-an-email`,
        stream_ids: [],
      });
      const body = err(res, 400, 'INVITATION_FAILED', "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!");
      assertConforms(res, 'POST', '/invites');
      assert.deepEqual(body.errors, [
        [s.cast.hamlet.user.delivery_email, 'Already has an account.', false],
        [s.cast.othello.user.delivery_email, 'Account has been deactivated.', true],
        ['not-an-email', 'Invalid address.', false],
      ]);
      assert.equal(body.sent_invitations, true);
      assert.equal(body.daily_limit_reached, false);
      assert.equal(body.license_limit_reached, false);
      assert.ok(ok(await s.cast.hamlet.client.get('/invites')).invites.some((i: any) => i.email === 'fresh@example.com'));
      const none = err(await s.cast.hamlet.client.post('/invites', { invitee_emails: s.cast.hamlet.user.delivery_email, stream_ids: [] }), 400, 'INVITATION_FAILED');
      assert.equal(none.sent_invitations, false);
    } finally {
      ok(await s.cast.owner.client.post(`/users/${s.cast.othello.user.id}/reactivate`));
    }
  });

  test('welcome_message_custom_text: administrators only; null means the organization default; empty means none', async () => {
    const s = server();
    ok(await s.cast.admin.client.post('/invites', { invitee_emails: 'custom@example.com', stream_ids: [], welcome_message_custom_text: 'Read the **handbook** first.' }));
    ok(await s.cast.hamlet.client.post('/invites', { invitee_emails: 'ignored@example.com', stream_ids: [], welcome_message_custom_text: 'Members cannot set this.' }));
    for (const email of ['custom@example.com', 'ignored@example.com']) {
      assert.equal((await join(s, linkFor(email), { full_name: email.split('@')[0]!, password: 'a sturdy password' })).status, 302);
    }
    const read = async (email: string) => {
      const u = (await fetchUserByEmail(s.app.services.db.kysely, s.realm.id, email))!;
      return (await dmsBetween(s, s.clientFor(u), 'welcome-bot@localhost')).map((m) => m.content);
    };
    assert.ok((await read('custom@example.com')).includes('Read the **handbook** first.'));
    assert.ok(!(await read('ignored@example.com')).includes('Members cannot set this.'));
  });

  test('revoke and resend: the creator or an administrator; unknown IDs; revoked links stop working', async () => {
    const s = server();
    ok(await s.cast.hamlet.client.post('/invites', { invitee_emails: 'revokee@example.com', stream_ids: [] }));
    const invite = ok(await s.cast.hamlet.client.get('/invites')).invites.find((i: any) => i.email === 'revokee@example.com');
    const before = inbox.filter((m) => m.to === 'revokee@example.com').length;
    ok(await s.cast.hamlet.client.post(`/invites/${invite.id}/resend`));
    assert.equal(inbox.filter((m) => m.to === 'revokee@example.com').length, before + 1);
    err(await s.cast.othello.client.delete(`/invites/${invite.id}`), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    err(await s.cast.hamlet.client.delete('/invites/987654'), 400, 'BAD_REQUEST', 'No such invitation');
    const link = linkFor('revokee@example.com');
    ok(await s.cast.admin.client.delete(`/invites/${invite.id}`));
    assert.equal((await fetch(joinUrl(s, link))).status, 404);
    assert.ok(!ok(await s.cast.hamlet.client.get('/invites')).invites.some((i: any) => i.id === invite.id && !i.is_multiuse));
  });

  test('reusable links: who may create them, sign-up with an email, revocation', async () => {
    const s = server();
    err(await s.cast.hamlet.client.post('/invites/multiuse', {}), 400, 'BAD_REQUEST', 'Insufficient permission');
    const res = await s.cast.admin.client.post('/invites/multiuse', { invite_as: 600 });
    const { invite_link } = ok(res);
    assertConforms(res, 'POST', '/invites/multiuse');
    assert.match(invite_link, /\/join\/[A-Za-z0-9_-]+\/$/);
    const listed = ok(await s.cast.admin.client.get('/invites')).invites.find((i: any) => i.is_multiuse);
    assert.equal(listed.link_url, invite_link);
    const bad = await join(s, invite_link, { email: 'nope', full_name: 'X', password: 'a sturdy password' });
    assert.equal(bad.status, 400);
    assert.equal((await join(s, invite_link, { email: 'guest1@example.com', full_name: 'Guest One', password: 'a sturdy password' })).status, 302);
    assert.equal((await join(s, invite_link, { email: 'guest2@example.com', full_name: 'Guest Two', password: 'a sturdy password' })).status, 302);
    assert.equal((await fetchUserByEmail(s.app.services.db.kysely, s.realm.id, 'guest2@example.com'))!.role, 600);
    ok(await s.cast.admin.client.delete(`/invites/multiuse/${listed.id}`));
    err(await s.cast.admin.client.delete(`/invites/multiuse/${listed.id}`), 400, 'BAD_REQUEST', 'Invitation has already been revoked');
    assert.equal((await fetch(joinUrl(s, invite_link))).status, 404);
  });

  test('expired invitations cannot be accepted', async () => {
    const s = server();
    ok(await s.cast.hamlet.client.post('/invites', { invitee_emails: 'late@example.com', stream_ids: [], invite_expires_in_minutes: 1 }));
    await s.app.services.db.kysely.updateTable('invites').set({ expiry: 1000 }).where('email', '=', 'late@example.com').execute();
    assert.equal((await fetch(joinUrl(s, linkFor('late@example.com')))).status, 404);
    assert.ok(!ok(await s.cast.hamlet.client.get('/invites')).invites.some((i: any) => i.email === 'late@example.com'));
  });
}, { smtpUrl, invites: { ...base.invites } });

forEachDatabase('invitations: daily limit', (server) => {
  test('beyond the daily limit nothing is sent', async () => {
    const s = server();
    ok(await s.cast.hamlet.client.post('/invites', { invitee_emails: 'd1@example.com, d2@example.com', stream_ids: [] }));
    const body = err(await s.cast.hamlet.client.post('/invites', { invitee_emails: 'd3@example.com, d4@example.com', stream_ids: [] }), 400, 'INVITATION_FAILED');
    assert.equal(body.daily_limit_reached, true);
    assert.equal(body.sent_invitations, false);
    assert.deepEqual(body.errors, []);
  });
}, { smtpUrl, invites: { ...base.invites, maxPerDay: 3 } });
