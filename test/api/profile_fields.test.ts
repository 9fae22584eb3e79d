import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertMatchesComponent } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import type { ParamValue } from '../helpers/client.js';

async function createField(s: TestServer, params: Record<string, ParamValue>): Promise<number> {
  return ok(await s.cast.admin.client.post('/realm/profile_fields', params)).id;
}

async function fields(s: TestServer): Promise<any[]> {
  return ok(await s.cast.hamlet.client.get('/realm/profile_fields')).custom_fields;
}

async function profileData(s: TestServer, userId: number): Promise<Record<string, any>> {
  return ok(await s.cast.othello.client.get(`/users/${userId}`, { include_custom_profile_fields: true })).user.profile_data;
}

const DROPDOWN = { vim: { text: 'Vim', order: '1' }, emacs: { text: 'Emacs', order: '2' } };

forEachDatabase('custom profile fields', (server) => {
  let phone = 0;
  let bio = 0;
  let editor = 0;
  let birthday = 0;
  let site = 0;
  let mentor = 0;
  let locked = 0;

  test('GET /realm/profile_fields starts empty; POST creates every type, admins only', async () => {
    const s = server();
    const empty = await s.cast.guest.client.get('/realm/profile_fields');
    assert.deepEqual(ok(empty).custom_fields, []);
    assertConforms(empty, 'GET', '/realm/profile_fields');
    err(await s.cast.hamlet.client.post('/realm/profile_fields', { name: 'x', field_type: 1 }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');

    const { result, events } = await captureEvents(s, () => s.cast.admin.client.post('/realm/profile_fields', { name: ' Phone number ', field_type: 1, hint: 'Yours' }));
    phone = ok(result).id;
    assertConforms(result, 'POST', '/realm/profile_fields');
    assert.equal(events.length, 1);
    assert.equal(events[0]!.event.type, 'custom_profile_fields');
    assert.equal((events[0]!.event.fields as any[])[0].name, 'Phone number');
    assert.ok(recipientIds(events[0]!).includes(s.cast.guest.user.id));

    bio = await createField(s, { name: 'Biography', field_type: 2, display_in_profile_summary: true });
    editor = await createField(s, { name: 'Favorite editor', field_type: 3, field_data: DROPDOWN });
    birthday = await createField(s, { name: 'Birthday', field_type: 4, required: true });
    site = await createField(s, { name: 'Website', field_type: 5, display_in_profile_summary: true });
    mentor = await createField(s, { name: 'Mentor', field_type: 6 });
    locked = await createField(s, { name: 'Badge', field_type: 1, editable_by_user: false });
    const github = await createField(s, { field_type: 7, field_data: { subtype: 'github' } });
    await createField(s, { name: 'Pronouns', field_type: 8, use_for_user_matching: false });

    const res = await s.cast.hamlet.client.get('/realm/profile_fields');
    assertConforms(res, 'GET', '/realm/profile_fields');
    const list = ok(res).custom_fields;
    for (const f of list) assertMatchesComponent(f, 'CustomProfileField');
    assert.deepEqual(list.map((f: { id: number }) => f.id), [...list.map((f: { id: number }) => f.id)].sort((a: number, b: number) => a - b));
    const byId = new Map(list.map((f: any) => [f.id, f]));
    assert.deepEqual(byId.get(phone), { id: phone, name: 'Phone number', type: 1, hint: 'Yours', field_data: '', order: phone, required: false, editable_by_user: true });
    assert.equal((byId.get(bio) as any).display_in_profile_summary, true);
    assert.deepEqual(JSON.parse((byId.get(editor) as any).field_data), DROPDOWN);
    assert.equal((byId.get(birthday) as any).required, true);
    assert.equal((byId.get(locked) as any).editable_by_user, false);
    assert.equal((byId.get(github) as any).name, 'GitHub username');
    assert.equal((byId.get(github) as any).field_data, '{"subtype":"github"}');
  });

  test('POST /realm/profile_fields refuses invalid definitions with Zulip messages', async () => {
    const s = server();
    const bad = (params: Record<string, ParamValue>, msg: string) => s.cast.admin.client.post('/realm/profile_fields', params).then((r) => err(r, 400, 'BAD_REQUEST', msg));
    const missing = err(await s.cast.admin.client.post('/realm/profile_fields', { name: 'x' }), 400, 'REQUEST_VARIABLE_MISSING');
    assert.equal(missing.var_name, 'field_type');
    await bad({ name: 'x', field_type: 99 }, 'Invalid field type.');
    await bad({ name: '  ', field_type: 1 }, 'Label cannot be blank.');
    await bad({ name: 'n'.repeat(41), field_type: 1 }, 'name is too long (limit: 40 characters)');
    await bad({ name: 'x', hint: 'h'.repeat(81), field_type: 1 }, 'hint is too long (limit: 80 characters)');
    await bad({ name: 'Phone number', field_type: 1 }, 'A field with that label already exists.');
    await bad({ name: 'Choice', field_type: 3, field_data: {} }, 'Field must have at least one choice.');
    await bad({ name: 'Choice', field_type: 3, field_data: { a: { text: 'A' } } }, 'order key is missing from field_data');
    await bad({ name: 'Choice', field_type: 3, field_data: { a: { text: 'A', order: '1' }, b: { text: 'A', order: '2' } } }, 'Field must not have duplicate choices.');
    await bad({ name: 'Choice', field_type: 3, field_data: [1] }, 'field_data is not a dict');
    await bad({ name: 'Account', field_type: 7, field_data: { subtype: 'myspace' } }, 'Invalid external account type');
    await bad({ name: 'Account', field_type: 7, field_data: { subtype: 'custom' } }, 'Custom external account must define URL pattern');
    await bad({ name: 'Account', field_type: 7, field_data: { subtype: 'custom', url_pattern: 'https://x.example/u' } }, "URL pattern must contain '%(username)s'.");
    await bad({ name: 'Third', field_type: 1, display_in_profile_summary: true }, 'Only 2 custom profile fields can be displayed in the profile summary.');
    await bad({ name: 'People', field_type: 6, use_for_user_matching: true }, 'Field type not supported for user matching.');
    err(await s.cast.admin.client.post('/realm/profile_fields', { name: 'x', field_type: 'one' }), 400, 'BAD_REQUEST', 'field_type is not an integer');
    const custom = await createField(s, { name: 'Mastodon', field_type: 7, field_data: { subtype: 'custom', url_pattern: 'https://social.example/@%(username)s' } });
    assert.ok(custom > 0);
  });

  test('PATCH /realm/profile_fields/{field_id} updates, with its own refusals', async () => {
    const s = server();
    const admin = s.cast.admin.client;
    err(await s.cast.hamlet.client.patch(`/realm/profile_fields/${phone}`, { name: 'x' }), 400, 'UNAUTHORIZED_PRINCIPAL');
    err(await admin.patch('/realm/profile_fields/987654', { name: 'x' }), 400, 'BAD_REQUEST', 'Field id 987654 not found.');
    const { result, events } = await captureEvents(s, () => admin.patch(`/realm/profile_fields/${phone}`, { name: 'Mobile', hint: 'Call me', required: true }));
    ok(result);
    assertConforms(result, 'PATCH', '/realm/profile_fields/{field_id}');
    assert.equal(events[0]!.event.type, 'custom_profile_fields');
    const f = (await fields(s)).find((x) => x.id === phone);
    assert.equal(f.name, 'Mobile');
    assert.equal(f.hint, 'Call me');
    assert.equal(f.required, true);
    assert.equal(f.type, 1);
    err(await admin.patch(`/realm/profile_fields/${phone}`, { name: 'Biography' }), 400, 'BAD_REQUEST', 'A field with that label already exists.');
    err(await admin.patch(`/realm/profile_fields/${phone}`, { display_in_profile_summary: true }), 400, 'BAD_REQUEST', 'Only 2 custom profile fields can be displayed in the profile summary.');
    err(await admin.patch(`/realm/profile_fields/${mentor}`, { name: ' ' }), 400, 'BAD_REQUEST', 'Label cannot be blank.');
    const github = (await fields(s)).find((x) => x.name === 'GitHub username');
    err(await admin.patch(`/realm/profile_fields/${github.id}`, { name: 'Code' }), 400, 'BAD_REQUEST', 'Default custom field cannot be updated.');
    ok(await admin.patch(`/realm/profile_fields/${github.id}`, { required: true }));
  });

  test('PATCH /users/me/profile_data validates each value by field type', async () => {
    const s = server();
    const { hamlet, othello, bot, guest } = s.cast;
    const c = hamlet.client;
    const bad = async (data: ParamValue, msg: string) => err(await c.patch('/users/me/profile_data', { data }), 400, 'BAD_REQUEST', msg);
    await bad([{ id: 987654, value: 'x' }], 'Field id 987654 not found.');
    await bad([{ id: phone, value: 'x'.repeat(51) }], 'Mobile is too long (limit: 50 characters)');
    await bad([{ id: bio, value: 'x'.repeat(501) }], 'Biography is too long (limit: 500 characters)');
    await bad([{ id: birthday, value: '1990-02-30' }], 'Birthday is not a date');
    await bad([{ id: site, value: 'not a url' }], 'Website is not a URL');
    await bad([{ id: editor, value: 'nano' }], "'nano' is not a valid choice for 'Favorite editor'.");
    await bad([{ id: mentor, value: [987654] }], 'Invalid user ID: 987654');
    await bad([{ id: mentor, value: [bot.user.id] }], `User with ID ${bot.user.id} is a bot`);
    await bad([{ id: mentor, value: 'abc' }], 'User IDs is not a list');
    await bad([{ id: phone, value: 5 }], 'data[0]["value"] is not an allowed_type');
    await bad([{ value: 'x' }], 'id key is missing from data[0]');
    await bad([{ id: phone, value: 'x', extra: 1 }], 'Unexpected arguments: extra');
    await bad([{ id: locked, value: 'gold' }], 'You are not allowed to change this field. Contact an administrator to update it.');
    err(await c.patch('/users/me/profile_data', {}), 400, 'REQUEST_VARIABLE_MISSING');
    err(await bot.client.patch('/users/me/profile_data', { data: [{ id: phone, value: '1' }] }), 400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');

    const data = [
      { id: phone, value: '+1-555-0100' },
      { id: bio, value: 'Prince of *Denmark*' },
      { id: editor, value: 'vim' },
      { id: birthday, value: '1600-01-01' },
      { id: site, value: 'https://hamlet.example.com/' },
      { id: mentor, value: [othello.user.id] },
    ];
    const { result, events } = await captureEvents(s, () => c.patch('/users/me/profile_data', { data }));
    ok(result);
    assertConforms(result, 'PATCH', '/users/me/profile_data');
    assert.equal(events.length, 6);
    const first = events[0]!;
    assert.deepEqual(first.event, {
      type: 'realm_user',
      op: 'update',
      person: { user_id: hamlet.user.id, custom_profile_field: { id: phone, value: '+1-555-0100', rendered_value: '<p>+1-555-0100</p>' } },
    });
    assert.ok(recipientIds(first).includes(guest.user.id));
    const pd = await profileData(s, hamlet.user.id);
    assert.deepEqual(pd[String(phone)], { value: '+1-555-0100', rendered_value: '<p>+1-555-0100</p>' });
    assert.equal(pd[String(bio)].value, 'Prince of *Denmark*');
    assert.equal(pd[String(bio)].rendered_value, '<p>Prince of <em>Denmark</em></p>');
    assert.deepEqual(pd[String(editor)], { value: 'vim' });
    assert.deepEqual(pd[String(birthday)], { value: '1600-01-01' });
    assert.deepEqual(pd[String(mentor)], { value: `[${othello.user.id}]` });
    const res = await othello.client.get(`/users/${hamlet.user.id}`, { include_custom_profile_fields: true });
    assertConforms(res, 'GET', '/users/{user_id}');
    // Same values again: nothing changes, nothing is announced.
    const again = await captureEvents(s, () => c.patch('/users/me/profile_data', { data }));
    ok(again.result);
    assert.equal(again.events.length, 0);
    // null (or an empty value) clears a field.
    const cleared = await captureEvents(s, () => c.patch('/users/me/profile_data', { data: [{ id: site, value: null }, { id: mentor, value: [] }] }));
    ok(cleared.result);
    assert.deepEqual(cleared.events.map((e) => e.event.person), [
      { user_id: hamlet.user.id, custom_profile_field: { id: site, value: null } },
      { user_id: hamlet.user.id, custom_profile_field: { id: mentor, value: null } },
    ]);
    const after = await profileData(s, hamlet.user.id);
    assert.equal(String(site) in after, false);
    assert.equal(String(mentor) in after, false);
  });

  test('DELETE /users/me/profile_data removes values', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    err(await c.delete('/users/me/profile_data', { data: [987654] }), 400, 'BAD_REQUEST', 'Field id 987654 not found.');
    err(await c.delete('/users/me/profile_data', { data: [locked] }), 400, 'BAD_REQUEST', 'You are not allowed to change this field. Contact an administrator to update it.');
    const res = await c.delete('/users/me/profile_data', { data: [birthday] });
    ok(res);
    assertConforms(res, 'DELETE', '/users/me/profile_data');
    assert.equal(String(birthday) in (await profileData(s, s.cast.hamlet.user.id)), false);
  });

  test('administrators set any field through PATCH /users/{user_id} profile_data', async () => {
    const s = server();
    const { admin, othello, hamlet } = s.cast;
    err(await admin.client.patch(`/users/${othello.user.id}`, { profile_data: [{ id: birthday, value: 'soon' }] }), 400, 'BAD_REQUEST', 'Birthday is not a date');
    err(await admin.client.patch(`/users/${othello.user.id}`, { profile_data: { id: 1 } }), 400, 'BAD_REQUEST', 'profile_data is not a list');
    // A refused part leaves the other parts of the request unapplied.
    err(await admin.client.patch(`/users/${othello.user.id}`, { full_name: 'Othello II', profile_data: [{ id: 987654, value: 'x' }] }), 400, 'BAD_REQUEST', 'Field id 987654 not found.');
    assert.equal(ok(await hamlet.client.get(`/users/${othello.user.id}`)).user.full_name, 'Othello, the Moor of Venice');
    ok(await admin.client.patch(`/users/${othello.user.id}`, { profile_data: [{ id: locked, value: 'gold' }, { id: editor, value: 'emacs' }] }));
    const pd = await profileData(s, othello.user.id);
    assert.equal(pd[String(locked)].value, 'gold');
    assert.equal(pd[String(editor)].value, 'emacs');
  });

  test('removing a dropdown option clears the values that chose it', async () => {
    const s = server();
    const { events } = await captureEvents(s, () =>
      s.cast.admin.client.patch(`/realm/profile_fields/${editor}`, { field_data: { vim: { text: 'Vim', order: '1' } } }),
    );
    assert.ok(events.some((e) => (e.event.person as any)?.user_id === s.cast.othello.user.id && (e.event.person as any).custom_profile_field.value === null));
    assert.equal(String(editor) in (await profileData(s, s.cast.othello.user.id)), false);
    assert.equal((await profileData(s, s.cast.hamlet.user.id))[String(editor)].value, 'vim');
  });

  test('PATCH /realm/profile_fields reorders; DELETE removes a field and its values', async () => {
    const s = server();
    const admin = s.cast.admin.client;
    const ids = (await fields(s)).map((f) => f.id);
    err(await admin.patch('/realm/profile_fields', { order: ids.slice(1) }), 400, 'BAD_REQUEST', 'Invalid order mapping.');
    err(await s.cast.hamlet.client.patch('/realm/profile_fields', { order: ids }), 400, 'UNAUTHORIZED_PRINCIPAL');
    const reversed = [...ids].reverse();
    const res = await admin.patch('/realm/profile_fields', { order: reversed });
    ok(res);
    assertConforms(res, 'PATCH', '/realm/profile_fields');
    assert.deepEqual((await fields(s)).map((f) => f.id), reversed);

    err(await admin.delete('/realm/profile_fields/987654'), 400, 'BAD_REQUEST', 'Field id 987654 not found.');
    const { result, events } = await captureEvents(s, () => admin.delete(`/realm/profile_fields/${phone}`));
    ok(result);
    assertConforms(result, 'DELETE', '/realm/profile_fields/{field_id}');
    assert.equal(events[0]!.event.type, 'custom_profile_fields');
    assert.ok(!(await fields(s)).some((f) => f.id === phone));
    assert.equal(String(phone) in (await profileData(s, s.cast.hamlet.user.id)), false);
  });
});
