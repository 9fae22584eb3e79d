import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { doCreateUser, doDeactivateUser } from '../../src/actions/users.js';
import { fetchRealmPresences, recordPresence } from '../../src/db/repos/presence.js';
import { presenceTimes } from '../../src/lib/format/presence.js';
import { realmPresenceView } from '../../src/lib/presence_view.js';
import { stringifyJson } from '../../src/lib/raw_json.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';
import type { User } from '../../src/db/tables.js';

// The view answers from cached blocks of its log; these compare every kind of answer with the
// database's own, across blocks, replaced entries, deactivations and a compaction of the log.
forEachDatabase('presence view', (server) => {
  test('answers exactly what the database says, for any update ID, as people report again and leave', { timeout: 120_000 }, async () => {
    const s = server();
    const { db } = s.app.services;
    const people: User[] = [];
    for (let i = 0; i < 150; i++) {
      people.push(await doCreateUser(s.app.services, s.realm, { email: `pv${i}@example.com`, fullName: `PV ${i}`, password: null, role: ROLE_MEMBER, actingUser: null }));
    }
    const now = Math.floor(Date.now() / 1000);
    const report = (u: User, t: number) => recordPresence(db, { user_id: u.id, realm_id: s.realm.id, last_active_time: t, last_connected_time: t });
    const ids: number[] = [];
    for (const [i, u] of people.entries()) ids.push(await report(u, now - 86_400 * (i % 20)));
    const view = realmPresenceView(db.kysely, s.realm.id);

    const compare = async (label: string) => {
      const all = await fetchRealmPresences(db.kysely, s.realm.id, {});
      const max = Math.max(...all.map((r) => r.last_update_id));
      const points = [-1, 0, ids[0]! - 1, ids[10]!, ids[63]!, ids[64]!, ids[100]!, max - 5, max];
      for (const after of points) {
        const got = await view.select(after, undefined);
        const rows = await fetchRealmPresences(db.kysely, s.realm.id, { afterUpdateId: after });
        const want = Object.fromEntries(rows.map((r) => [String(r.user_id), (({ active, connected }) => ({ active_timestamp: active, idle_timestamp: connected }))(presenceTimes(r))]));
        const text = stringifyJson(got.presences);
        assert.deepEqual(JSON.parse(text), want, `${label}: after ${after}`);
        // Each person once: a replaced entry must not linger in the text (JSON.parse would hide it).
        assert.equal(text.match(/"\d+":\{/g)?.length ?? 0, rows.length, `${label}: entries after ${after}`);
        assert.equal(got.lastUpdateId, Math.max(after, ...rows.map((r) => r.last_update_id)), `${label}: last update ID after ${after}`);
      }
      const since = now - 7 * 86_400;
      const initial = await view.select(-1, since);
      const rows = await fetchRealmPresences(db.kysely, s.realm.id, { connectedSince: since });
      assert.deepEqual(Object.keys(JSON.parse(stringifyJson(initial.presences))).sort(), rows.map((r) => String(r.user_id)).sort(), `${label}: initial fetch`);
    };

    await compare('first reports');
    // Some report again (their older entries die, in the middle of cached blocks).
    for (const u of people.filter((_, i) => i % 7 === 3)) await report(u, now);
    await compare('after reports again');
    await doDeactivateUser(s.app.services, s.realm, people[5]!, null);
    await doDeactivateUser(s.app.services, s.realm, people[70]!, null);
    await compare('after deactivations');
    // Enough reports again, each round read by the view, that most of its log is dead: it is compacted.
    for (let round = 0; round < 10; round++) {
      for (const u of people) await report(u, now + round);
      await view.select(Number.MAX_SAFE_INTEGER, undefined);
      if (round === 4) await compare('before compaction');
    }
    await compare('after compaction');
  });
});
