import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertMatchesComponent } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';

async function systemGroupId(s: TestServer, name: string): Promise<number> {
  const body = ok(await s.cast.owner.client.get('/user_groups', { include_deactivated_groups: true }));
  return body.user_groups.find((g: { name: string }) => g.name === name).id;
}

async function createGroup(s: TestServer, name: string, extra: Record<string, unknown> = {}, by = s.cast.hamlet.client): Promise<number> {
  const body = ok(await by.post('/user_groups/create', { name, description: `${name} team`, members: [s.cast.hamlet.user.id], ...extra }));
  return body.group_id;
}

async function groupById(s: TestServer, id: number): Promise<any> {
  const body = ok(await s.cast.owner.client.get('/user_groups', { include_deactivated_groups: true }));
  return body.user_groups.find((g: { id: number }) => g.id === id);
}

forEachDatabase('user groups', (server) => {
  test('GET /user_groups lists the system groups nested as in Zulip; guests are refused', async () => {
    const s = server();
    const res = await s.cast.hamlet.client.get('/user_groups');
    const body = ok(res);
    assertConforms(res, 'GET', '/user_groups');
    const byName = new Map(body.user_groups.map((g: any) => [g.name, g]));
    for (const n of ['role:internet', 'role:everyone', 'role:members', 'role:fullmembers', 'role:moderators', 'role:administrators', 'role:owners', 'role:nobody']) {
      assert.ok(byName.has(n), n);
      assert.equal((byName.get(n) as any).is_system_group, true);
    }
    const owners: any = byName.get('role:owners');
    const admins: any = byName.get('role:administrators');
    const members: any = byName.get('role:members');
    assert.deepEqual(owners.members, [s.cast.owner.user.id]);
    assert.deepEqual(admins.direct_subgroup_ids, [owners.id]);
    assert.ok(members.members.includes(s.cast.hamlet.user.id));
    assert.deepEqual((byName.get('role:everyone') as any).members, [s.cast.guest.user.id]);
    // System groups can be changed by nobody.
    const nobody: any = byName.get('role:nobody');
    assert.equal(owners.can_manage_group, nobody.id);
    err(await s.cast.guest.client.get('/user_groups'), 400, 'BAD_REQUEST', 'Not allowed for guest users');
    // Bots may use the group endpoints from feature level 496.
    ok(await s.cast.bot.client.get('/user_groups'));
  });

  test('POST /user_groups/create applies Zulip defaults and announces the group', async () => {
    const s = server();
    const { result, events } = await captureEvents(s, () =>
      s.cast.hamlet.client.post('/user_groups/create', { name: 'backend', description: 'Backend team', members: [s.cast.hamlet.user.id, s.cast.othello.user.id] }),
    );
    const body = ok(result);
    assertConforms(result, 'POST', '/user_groups/create');
    const group = await groupById(s, body.group_id);
    assert.equal(group.name, 'backend');
    assert.equal(group.creator_id, s.cast.hamlet.user.id);
    assert.equal(typeof group.date_created, 'number');
    assert.deepEqual(group.members, [s.cast.hamlet.user.id, s.cast.othello.user.id].sort((a, b) => a - b));
    assert.deepEqual(group.can_manage_group, { direct_members: [s.cast.hamlet.user.id], direct_subgroups: [] });
    assert.deepEqual(group.can_add_members_group, { direct_members: [s.cast.hamlet.user.id], direct_subgroups: [] });
    assert.equal(group.can_join_group, await systemGroupId(s, 'role:nobody'));
    assert.equal(group.can_leave_group, await systemGroupId(s, 'role:everyone'));
    assert.equal(group.can_mention_group, await systemGroupId(s, 'role:everyone'));
    const add = events.find((e) => e.event.type === 'user_group' && e.event.op === 'add')!;
    assert.ok(add, 'user_group add event');
    assert.deepEqual((add.event.group as any).id, body.group_id);
    assertMatchesComponent(add.event.group, 'UserGroup');
    assert.ok(recipientIds(add).includes(s.cast.guest.user.id));
  });

  test('create: validation errors', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    err(await c.post('/user_groups/create', { name: 'x1', description: '', members: [999999] }), 400, 'BAD_REQUEST', 'Invalid user ID: 999999');
    err(await c.post('/user_groups/create', { name: 'role:mine', description: '', members: [] }), 400, 'BAD_REQUEST', "User group name cannot start with 'role:'.");
    err(await c.post('/user_groups/create', { name: '  ', description: '', members: [] }), 400, 'BAD_REQUEST', "User group name can't be empty!");
    err(await c.post('/user_groups/create', { name: 'x'.repeat(101), description: '', members: [] }), 400, 'BAD_REQUEST', 'User group name cannot exceed 100 characters.');
    await createGroup(s, 'dupe');
    err(await c.post('/user_groups/create', { name: 'DUPE', description: '', members: [] }), 400, 'BAD_REQUEST', "User group 'DUPE' already exists.");
    err(await c.post('/user_groups/create', { name: 'x2', description: '' }), 400, 'REQUEST_VARIABLE_MISSING');
    const internet = await systemGroupId(s, 'role:internet');
    err(
      await c.post('/user_groups/create', { name: 'x3', description: '', members: [], can_manage_group: internet }),
      400,
      'BAD_REQUEST',
      "'can_manage_group' setting cannot be set to 'role:internet' group.",
    );
    err(await s.cast.guest.client.post('/user_groups/create', { name: 'g', description: '', members: [] }), 400, 'BAD_REQUEST');
  });

  test('PATCH /user_groups/{id}: who may edit, and the spec rules for each setting', async () => {
    const s = server();
    const id = await createGroup(s, 'editors');
    const hamlet = s.cast.hamlet.client;
    const othello = s.cast.othello.client;
    err(await hamlet.patch(`/user_groups/${id}`, {}), 400, 'BAD_REQUEST', 'No new data supplied');
    err(await othello.patch(`/user_groups/${id}`, { name: 'x' }), 400, 'BAD_REQUEST', 'Insufficient permission');
    // Administrators are not in can_manage_all_groups (owners) by default; owners are.
    err(await s.cast.admin.client.patch(`/user_groups/${id}`, { description: 'x' }), 400, 'BAD_REQUEST', 'Insufficient permission');
    ok(await s.cast.owner.client.patch(`/user_groups/${id}`, { description: 'by owner' }));
    err(await hamlet.patch('/user_groups/999999', { name: 'x' }), 400, 'BAD_REQUEST', 'Invalid user group');
    err(await hamlet.patch(`/user_groups/${await systemGroupId(s, 'role:members')}`, { name: 'x' }), 400, 'BAD_REQUEST', 'Insufficient permission');

    const { result, events } = await captureEvents(s, () => hamlet.patch(`/user_groups/${id}`, { name: 'editors2', description: 'new' }));
    ok(result);
    const updates = events.filter((e) => e.event.op === 'update').map((e) => e.event.data);
    assert.deepEqual(updates, [{ name: 'editors2' }, { description: 'new' }]);

    const everyone = await systemGroupId(s, 'role:everyone');
    const owners = await systemGroupId(s, 'role:owners');
    const internet = await systemGroupId(s, 'role:internet');
    const moderators = await systemGroupId(s, 'role:moderators');
    err(await hamlet.patch(`/user_groups/${id}`, { can_manage_group: { new: everyone } }), 400, 'BAD_REQUEST', "'can_manage_group' setting cannot be set to 'role:everyone' group.");
    err(await hamlet.patch(`/user_groups/${id}`, { can_manage_group: { new: internet } }), 400, 'BAD_REQUEST', "'can_manage_group' setting cannot be set to 'role:internet' group.");
    err(await hamlet.patch(`/user_groups/${id}`, { can_mention_group: { new: owners } }), 400, 'BAD_REQUEST', "'can_mention_group' setting cannot be set to 'role:owners' group.");
    err(await hamlet.patch(`/user_groups/${id}`, { can_mention_group: { new: internet } }), 400, 'BAD_REQUEST', "'can_mention_group' setting cannot be set to 'role:internet' group.");
    // Only the object form with `new` (and optional `old`) is accepted.
    err(await hamlet.patch(`/user_groups/${id}`, { can_mention_group: moderators }), 400, 'BAD_REQUEST');
    // A stale `old` is refused.
    err(await hamlet.patch(`/user_groups/${id}`, { can_mention_group: { new: moderators, old: owners } }), 400, 'BAD_REQUEST', "'old' value does not match the expected value.");
    ok(await hamlet.patch(`/user_groups/${id}`, { can_mention_group: { new: moderators, old: everyone } }));
    ok(await hamlet.patch(`/user_groups/${id}`, { can_mention_group: { new: { direct_members: [s.cast.othello.user.id], direct_subgroups: [moderators] }, old: moderators } }));
    const g = await groupById(s, id);
    assert.deepEqual(g.can_mention_group, { direct_members: [s.cast.othello.user.id], direct_subgroups: [moderators] });
    // An anonymous group of one subgroup is that group.
    ok(await hamlet.patch(`/user_groups/${id}`, { can_mention_group: { new: { direct_members: [], direct_subgroups: [everyone] } } }));
    assert.equal((await groupById(s, id)).can_mention_group, everyone);
    // Granting othello can_manage_group lets him edit.
    ok(await hamlet.patch(`/user_groups/${id}`, { can_manage_group: { new: { direct_members: [s.cast.hamlet.user.id, s.cast.othello.user.id], direct_subgroups: [] } } }));
    ok(await othello.patch(`/user_groups/${id}`, { description: 'othello was here' }));
  });

  test('bots may call PATCH when their permission allows it', async () => {
    const s = server();
    const id = await createGroup(s, 'botgroup');
    ok(await s.cast.hamlet.client.patch(`/user_groups/${id}`, { can_manage_group: { new: { direct_members: [s.cast.bot.user.id], direct_subgroups: [] } } }));
    ok(await s.cast.bot.client.patch(`/user_groups/${id}`, { description: 'set by a bot' }));
  });

  test('deactivation: in-use groups refused; deactivated groups stay editable but unusable; deactivated=false reactivates', async () => {
    const s = server();
    const hamlet = s.cast.hamlet.client;
    const inner = await createGroup(s, 'inner');
    const outer = await createGroup(s, 'outer', { subgroups: [inner] });
    const res = await hamlet.post(`/user_groups/${inner}/deactivate`);
    const body = err(res, 400, 'CANNOT_DEACTIVATE_GROUP_IN_USE', 'Cannot deactivate user group in use.');
    // zulip.yaml's schema for this error omits `objections`, which its own example (and Zulip) returns.
    assert.deepEqual(body.objections, [{ type: 'subgroup', supergroup_ids: [outer] }]);

    const user = await createGroup(s, 'user-of-setting');
    const setter = await createGroup(s, 'setter');
    ok(await hamlet.patch(`/user_groups/${setter}`, { can_mention_group: { new: user } }));
    const used = err(await hamlet.post(`/user_groups/${user}/deactivate`), 400, 'CANNOT_DEACTIVATE_GROUP_IN_USE');
    assert.deepEqual(used.objections, [{ type: 'user_group', group_id: setter, settings: ['can_mention_group'] }]);

    // A group used by a realm setting: can_create_groups does not end in _group.
    const creators = await createGroup(s, 'creators');
    ok(await s.cast.owner.client.patch('/realm', { can_create_groups: { new: creators } }));
    const byRealm = err(await hamlet.post(`/user_groups/${creators}/deactivate`), 400, 'CANNOT_DEACTIVATE_GROUP_IN_USE');
    assert.deepEqual(byRealm.objections, [{ type: 'realm', settings: ['can_create_groups'] }]);
    ok(await s.cast.owner.client.patch('/realm', { can_create_groups: { new: await systemGroupId(s, 'role:members') } }));

    const lonely = await createGroup(s, 'lonely');
    const { result, events } = await captureEvents(s, () => hamlet.post(`/user_groups/${lonely}/deactivate`));
    ok(result);
    const update = events.find((e) => e.event.op === 'update')!;
    assert.deepEqual(update.event.data, { deactivated: true });
    assert.deepEqual(update.onlyIf, { capability: 'include_deactivated_groups', value: true });
    const remove = events.find((e) => e.event.op === 'remove')!;
    assert.deepEqual(remove.onlyIf, { capability: 'include_deactivated_groups', value: false });

    // Hidden from the default listing, still editable, unusable in permissions.
    const listed = ok(await hamlet.get('/user_groups')).user_groups.map((g: any) => g.id);
    assert.ok(!listed.includes(lonely));
    assert.equal((await groupById(s, lonely)).deactivated, true);
    ok(await hamlet.patch(`/user_groups/${lonely}`, { name: 'lonely-renamed' }));
    err(await hamlet.patch(`/user_groups/${setter}`, { can_mention_group: { new: lonely } }), 400, 'BAD_REQUEST', 'User group is deactivated.');
    err(await hamlet.post(`/user_groups/${outer}/subgroups`, { add: [lonely] }), 400, 'BAD_REQUEST', 'User group is deactivated.');
    err(await hamlet.post(`/user_groups/${lonely}/deactivate`), 400, 'BAD_REQUEST', 'User group is deactivated.');

    // deactivated=true does nothing; false reactivates.
    ok(await hamlet.patch(`/user_groups/${lonely}`, { deactivated: true }));
    assert.equal((await groupById(s, lonely)).deactivated, true);
    ok(await hamlet.patch(`/user_groups/${lonely}`, { deactivated: false }));
    assert.equal((await groupById(s, lonely)).deactivated, false);
    ok(await hamlet.patch(`/user_groups/${setter}`, { can_mention_group: { new: lonely } }));
  });

  test('members: join, leave, add and remove follow the group settings', async () => {
    const s = server();
    const id = await createGroup(s, 'club');
    const { hamlet, othello } = s.cast;
    const othelloId = othello.user.id;
    // Joining needs can_join_group (nobody by default) or can_add_members_group.
    err(await othello.client.post(`/user_groups/${id}/members`, { add: [othelloId] }), 400, 'BAD_REQUEST', 'Insufficient permission');
    err(await othello.client.post(`/user_groups/${id}/members`, { add: [s.cast.guest.user.id] }), 400, 'BAD_REQUEST', 'Insufficient permission');
    ok(await hamlet.client.patch(`/user_groups/${id}`, { can_join_group: { new: await systemGroupId(s, 'role:members') } }));
    const { result, events } = await captureEvents(s, () => othello.client.post(`/user_groups/${id}/members`, { add: [othelloId] }));
    ok(result);
    assert.deepEqual(events.map((e) => e.event), [{ type: 'user_group', op: 'add_members', group_id: id, user_ids: [othelloId] }]);
    err(await hamlet.client.post(`/user_groups/${id}/members`, { add: [othelloId] }), 400, 'BAD_REQUEST', `User ${othelloId} is already a member of this group`);
    // Leaving oneself: can_leave_group is role:everyone by default.
    ok(await othello.client.post(`/user_groups/${id}/members`, { delete: [othelloId] }));
    err(await hamlet.client.post(`/user_groups/${id}/members`, { delete: [othelloId] }), 400, 'BAD_REQUEST', `There is no member '${othelloId}' in this user group`);
    // Removing others needs can_remove_members_group (nobody) unless one manages the group.
    ok(await hamlet.client.post(`/user_groups/${id}/members`, { add: [othelloId] }));
    err(await othello.client.post(`/user_groups/${id}/members`, { delete: [hamlet.user.id] }), 400, 'BAD_REQUEST', 'Insufficient permission');
    ok(await hamlet.client.post(`/user_groups/${id}/members`, { delete: [othelloId] }));
    err(await hamlet.client.post(`/user_groups/${id}/members`, {}), 400, 'BAD_REQUEST', 'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".');
    err(await hamlet.client.post(`/user_groups/${id}/members`, { add: [424242] }), 400, 'BAD_REQUEST', 'Invalid user ID: 424242');
  });

  test('GET membership: recursive through subgroups, direct_member_only, deactivated users never members', async () => {
    const s = server();
    const hamlet = s.cast.hamlet.client;
    const inner = await createGroup(s, 'inner-m', { members: [s.cast.othello.user.id] });
    const outer = await createGroup(s, 'outer-m', { members: [], subgroups: [inner] });
    const othelloId = s.cast.othello.user.id;
    const res = await hamlet.get(`/user_groups/${outer}/members/${othelloId}`);
    assert.equal(ok(res).is_user_group_member, true);
    assertConforms(res, 'GET', '/user_groups/{user_group_id}/members/{user_id}');
    assert.equal(ok(await hamlet.get(`/user_groups/${outer}/members/${othelloId}`, { direct_member_only: true })).is_user_group_member, false);
    assert.equal(ok(await hamlet.get(`/user_groups/${inner}/members/${othelloId}`, { direct_member_only: true })).is_user_group_member, true);
    assert.deepEqual(ok(await hamlet.get(`/user_groups/${outer}/members`)).members, [othelloId]);
    assert.deepEqual(ok(await hamlet.get(`/user_groups/${outer}/members`, { direct_member_only: true })).members, []);
    assert.deepEqual(ok(await hamlet.get(`/user_groups/${outer}/subgroups`)).subgroups, [inner]);
    // Bots can be queried (feature level 458) and can ask (496).
    assert.equal(ok(await s.cast.bot.client.get(`/user_groups/${outer}/members/${s.cast.bot.user.id}`)).is_user_group_member, false);
    // A system group reached through nesting.
    const members = await systemGroupId(s, 'role:members');
    assert.equal(ok(await hamlet.get(`/user_groups/${members}/members/${s.cast.owner.user.id}`)).is_user_group_member, true);
    assert.equal(ok(await hamlet.get(`/user_groups/${members}/members/${s.cast.owner.user.id}`, { direct_member_only: true })).is_user_group_member, false);
    // A deactivated user is not reported as a member.
    await s.app.services.db.kysely.updateTable('users').set({ is_active: 0 }).where('id', '=', othelloId).execute();
    try {
      assert.equal(ok(await hamlet.get(`/user_groups/${inner}/members/${othelloId}`)).is_user_group_member, false);
      assert.deepEqual(ok(await hamlet.get(`/user_groups/${inner}/members`)).members, []);
    } finally {
      await s.app.services.db.kysely.updateTable('users').set({ is_active: 1 }).where('id', '=', othelloId).execute();
    }
    err(await hamlet.get(`/user_groups/999999/members/${othelloId}`), 400, 'BAD_REQUEST', 'Invalid user group');
    err(await hamlet.get(`/user_groups/${outer}/members/999999`), 400, 'BAD_REQUEST', 'No such user');
    err(await s.cast.guest.client.get(`/user_groups/${outer}/members/${othelloId}`), 400, 'BAD_REQUEST', 'Not allowed for guest users');
  });

  test('subgroups: cycles and duplicates are refused', async () => {
    const s = server();
    const hamlet = s.cast.hamlet.client;
    const a = await createGroup(s, 'cyc-a');
    const b = await createGroup(s, 'cyc-b', { subgroups: [a] });
    err(await hamlet.post(`/user_groups/${a}/subgroups`, { add: [b] }), 400, 'BAD_REQUEST', `User group ${a} is already a subgroup of one of the passed subgroups.`);
    err(await hamlet.post(`/user_groups/${b}/subgroups`, { add: [a] }), 400, 'BAD_REQUEST', `User group ${a} is already a subgroup of this group.`);
    err(await hamlet.post(`/user_groups/${b}/subgroups`, { delete: [b] }), 400, 'BAD_REQUEST', `User group ${b} is not a subgroup of this group.`);
    const { result, events } = await captureEvents(s, () => hamlet.post(`/user_groups/${b}/subgroups`, { delete: [a] }));
    ok(result);
    assert.deepEqual(events.map((e) => e.event), [{ type: 'user_group', op: 'remove_subgroups', group_id: b, direct_subgroup_ids: [a] }]);
    const added = await captureEvents(s, () => hamlet.post(`/user_groups/${b}/subgroups`, { add: [a] }));
    ok(added.result);
    assert.deepEqual(added.events.map((e) => e.event), [{ type: 'user_group', op: 'add_subgroups', group_id: b, direct_subgroup_ids: [a] }]);
  });
});
