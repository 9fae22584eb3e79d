import type { Tx } from '../db/index.js';
import type { Realm } from '../db/tables.js';
import { fetchUserIdsSharingConversations, fetchUsersByIds } from '../db/repos/users.js';
import type { RealmUserRole } from '../lib/access/streams.js';
import { callerCanAccessAllUsers } from '../lib/access/users.js';
import { formatUser } from '../lib/format/users.js';
import type { GroupMembership } from '../lib/group_settings.js';
import { ROLE_GUEST } from '../lib/roles.js';
import type { ActionServices } from '../services.js';

type AfterCommit = (cb: () => void) => void;

/** Zulip's UserProfile.INACCESSIBLE_USER_NAME. */
const INACCESSIBLE_USER_NAME = 'Unknown user';

/**
 * Whom each guest restricted by can_access_all_users_group sees (the people they share a
 * channel or a direct message with), taken before a change of subscriptions; `announce` after
 * the change tells each of them whom they gained (`realm_user` add, the person as Zulip's
 * notify_created_user formats it) and whom they lost (`realm_user` remove with the
 * "Unknown user" name), as Zulip's send_user_creation_events_on_adding_subscriptions and
 * send_user_remove_events_on_removing_subscriptions do. Bots stay visible to everyone.
 */
export class GuestSight {
  private constructor(private readonly before: ReadonlyMap<number, ReadonlySet<number>>) {}

  /**
   * `concerned`: the users whose subscriptions change and the subscribers of the channels
   * changed, asked only when the organization has restricted guests; only those among them
   * can gain or lose anyone. Null when there are none, the common case, which costs no query.
   */
  static async take(
    tx: Tx,
    realm: Realm,
    active: readonly RealmUserRole[],
    m: GroupMembership,
    concerned: () => Promise<ReadonlySet<number>>,
  ): Promise<GuestSight | null> {
    const restricted = active.filter((u) => u.role === ROLE_GUEST && !callerCanAccessAllUsers(realm, u, m));
    if (restricted.length === 0) return null;
    const ids = await concerned();
    const guests = restricted.filter((u) => ids.has(u.id));
    if (guests.length === 0) return null;
    const before = new Map<number, ReadonlySet<number>>();
    for (const g of guests) before.set(g.id, new Set(await fetchUserIdsSharingConversations(tx, realm.id, g.id)));
    return new GuestSight(before);
  }

  async announce(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, active: readonly RealmUserRole[]): Promise<void> {
    const changes: { guestId: number; gained: number[]; lost: number[] }[] = [];
    const involved = new Set<number>();
    for (const [guestId, before] of this.before) {
      const after = new Set(await fetchUserIdsSharingConversations(tx, realm.id, guestId));
      const gained = [...after].filter((id) => id !== guestId && !before.has(id));
      const lost = [...before].filter((id) => id !== guestId && !after.has(id));
      if (gained.length === 0 && lost.length === 0) continue;
      changes.push({ guestId, gained, lost });
      for (const id of [...gained, ...lost]) involved.add(id);
    }
    if (changes.length === 0) return;
    const users = new Map((await fetchUsersByIds(tx, realm.id, [...involved])).map((u) => [u.id, u]));
    const roles = new Map(active.map((u) => [u.id, u]));
    const events: { event: { type: string; op: string; person: Record<string, unknown> }; to: number }[] = [];
    for (const { guestId, gained, lost } of changes) {
      const viewer = roles.get(guestId)!;
      for (const id of gained.sort((a, b) => a - b)) {
        const user = users.get(id);
        if (!user || user.is_bot) continue;
        const person = formatUser(user, { config: services.config, realm, viewer, clientGravatar: false, profileData: new Map() });
        events.push({ event: { type: 'realm_user', op: 'add', person }, to: guestId });
      }
      for (const id of lost.sort((a, b) => a - b)) {
        const user = users.get(id);
        if (!user || user.is_bot) continue;
        events.push({ event: { type: 'realm_user', op: 'remove', person: { user_id: id, full_name: INACCESSIBLE_USER_NAME } }, to: guestId });
      }
    }
    afterCommit(() => {
      for (const { event, to } of events) services.events.send(realm.id, event, [to]);
    });
  }
}
