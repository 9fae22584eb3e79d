import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { forEachDatabase } from '../helpers/server.js';
import {
  GroupMembership,
  loadGroupMembership,
  loadUserGroupMembership,
  userHasGroupPermission,
  type GroupSettingValue,
} from '../../src/lib/group_settings.js';
import type { GroupRows } from '../../src/db/repos/user_groups.js';
import { insertGroupMembers, insertSubgroups, insertUserGroup } from '../../src/db/repos/user_groups.js';
import { ROLE_GUEST, ROLE_MEMBER } from '../../src/lib/roles.js';

/**
 * Group-setting evaluation (issue 2, item 9): one function decides every realm, channel and
 * group permission, through nested subgroups; deactivated groups and deactivated users get nothing.
 */

// outer(1) ⊃ middle(2) ⊃ inner(3) ∋ user 10; user 11 directly in outer; 12 inactive in inner;
// dead(4) is deactivated and contains user 13, and has inner as a subgroup.
const rows: GroupRows = {
  groups: [
    { id: 1, name: 'outer', is_system_group: 0, deactivated: 0 },
    { id: 2, name: 'middle', is_system_group: 0, deactivated: 0 },
    { id: 3, name: 'inner', is_system_group: 0, deactivated: 0 },
    { id: 4, name: 'dead', is_system_group: 0, deactivated: 1 },
    { id: 5, name: 'role:everyone', is_system_group: 1, deactivated: 0 },
  ],
  members: [
    { group_id: 3, user_id: 10 },
    { group_id: 1, user_id: 11 },
    { group_id: 3, user_id: 12 },
    { group_id: 4, user_id: 13 },
  ],
  subgroups: [
    { group_id: 1, subgroup_id: 2 },
    { group_id: 2, subgroup_id: 3 },
    { group_id: 4, subgroup_id: 3 },
  ],
  inactiveUserIds: [12],
};

describe('GroupMembership', () => {
  const m = new GroupMembership(rows);

  test('a user in a subgroup of the allowed group holds the setting, at any depth', () => {
    assert.equal(m.isUserInSetting(1, 10), true);
    assert.equal(m.isUserInSetting(2, 10), true);
    assert.equal(m.isUserInSetting(3, 10), true);
    assert.equal(m.isUserInSetting(1, 11), true);
    assert.equal(m.isUserInSetting(2, 11), false);
    assert.deepEqual([...m.settingMembers(1)].sort(), [10, 11]);
  });

  test('anonymous values: direct members and (nested) direct subgroups', () => {
    const v: GroupSettingValue = { direct_members: [11], direct_subgroups: [2] };
    assert.equal(m.isUserInSetting(v, 11), true);
    assert.equal(m.isUserInSetting(v, 10), true);
    assert.equal(m.isUserInSetting({ direct_members: [], direct_subgroups: [] }, 10), false);
  });

  test('deactivated groups grant nothing, directly or as a subgroup of an anonymous value', () => {
    assert.equal(m.isUserInSetting(4, 13), false);
    assert.equal(m.isUserInSetting(4, 10), false);
    assert.equal(m.isUserInSetting({ direct_members: [], direct_subgroups: [4] }, 13), false);
    assert.deepEqual([...m.settingMembers(4)], []);
  });

  test('deactivated users hold nothing', () => {
    assert.equal(m.isUserInSetting(3, 12), false);
    assert.equal(m.isUserInSetting({ direct_members: [12], direct_subgroups: [] }, 12), false);
  });

  test('settings that may not be role:everyone never grant guests anything', () => {
    const guest = { id: 10, role: ROLE_GUEST };
    assert.equal(userHasGroupPermission(m, 1, guest, { allowEveryoneGroup: false }), false);
    assert.equal(userHasGroupPermission(m, 1, guest, { allowEveryoneGroup: true }), true);
    assert.equal(userHasGroupPermission(m, 1, { id: 10, role: ROLE_MEMBER }, { allowEveryoneGroup: false }), true);
  });
});

forEachDatabase('group settings against the database', (server) => {
  test('loadUserGroupMembership answers exactly as the realm-wide membership, on random nested groups', async () => {
    const s = server();
    const db = s.app.services.db.kysely;
    const users = Object.values(s.cast).map((c) => c.user);
    // A random DAG: group i may only contain groups created before it, so no cycles.
    const shapes = fc.array(
      fc.record({
        members: fc.subarray(users.map((u) => u.id)),
        subgroups: fc.array(fc.nat({ max: 9 }), { maxLength: 3 }),
        deactivated: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
      }),
      { minLength: 4, maxLength: 10 },
    );
    await fc.assert(
      fc.asyncProperty(shapes, async (shape) => {
        const ids: number[] = [];
        for (const [i, g] of shape.entries()) {
          const row = await insertUserGroup(db, {
            realm_id: s.realm.id,
            name: `random ${i} ${Math.random()}`,
            description: '',
            is_system_group: 0,
            date_created: 0,
            creator_id: null,
          });
          await insertGroupMembers(db, row.id, g.members);
          await insertSubgroups(db, row.id, [...new Set(g.subgroups.filter((x) => x < i).map((x) => ids[x]!))]);
          if (g.deactivated) await db.updateTable('user_groups').set({ deactivated: 1 }).where('id', '=', row.id).execute();
          ids.push(row.id);
        }
        const realmWide = await loadGroupMembership(db, s.realm.id);
        const systemIds = [...realmWide.byId.values()].filter((g) => g.isSystem).map((g) => g.id);
        const values: GroupSettingValue[] = [
          ...ids,
          ...systemIds,
          { direct_members: [users[0]!.id], direct_subgroups: ids.slice(0, 2) },
          { direct_members: [], direct_subgroups: ids.slice(-3) },
        ];
        for (const user of users) {
          const mine = await loadUserGroupMembership(db, user);
          for (const v of values) {
            assert.equal(mine.isUserInSetting(v, user.id), realmWide.isUserInSetting(v, user.id), `user ${user.id}, value ${JSON.stringify(v)}`);
          }
        }
      }),
      { numRuns: 8 },
    );
  });

  test('system groups nest by role: members include moderators, administrators and owners', async () => {
    const s = server();
    const db = s.app.services.db.kysely;
    const m = await loadGroupMembership(db, s.realm.id);
    const members = m.systemGroupId('role:members');
    for (const who of ['owner', 'admin', 'moderator', 'hamlet'] as const) {
      const user = s.cast[who].user;
      assert.equal((await loadUserGroupMembership(db, user)).isUserInSetting(members, user.id), true, who);
    }
    const guest = s.cast.guest.user;
    assert.equal((await loadUserGroupMembership(db, guest)).isUserInSetting(members, guest.id), false);
    assert.equal((await loadUserGroupMembership(db, guest)).isUserInSetting(m.systemGroupId('role:everyone'), guest.id), true);
  });
});
