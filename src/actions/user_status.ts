import { now, transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchActiveRealmEmoji, fetchRealmEmoji } from '../db/repos/realm_emoji.js';
import { fetchUserStatus, upsertUserStatus } from '../db/repos/user_status.js';
import { badRequest } from '../errors.js';
import type { ZulipEvent } from '../events/bus.js';
import { userIdsWhoCanAccess } from '../lib/access/users.js';
import { checkEmojiRequest, emojiDataForName } from '../lib/emoji.js';
import { codePointLength } from '../lib/topics.js';
import type { ActionServices } from '../services.js';
import { doChangeUserSettings } from './user_settings.js';

/** Zulip's UserStatus.MAX_STATUS_TEXT_LENGTH. */
export const MAX_STATUS_TEXT_LENGTH = 60;

export interface StatusRequest {
  away?: boolean;
  statusText?: string;
  emojiName?: string;
  emojiCode?: string;
  reactionType?: string;
}

/** What changes; undefined parts stay as they are (Zulip's check_update_user_status). */
export interface PreparedStatus {
  away?: boolean;
  statusText?: string;
  emoji?: { name: string; code: string; type: string };
}

export async function checkUpdateUserStatus(services: ActionServices, realm: Realm, req: StatusRequest): Promise<PreparedStatus> {
  const statusText = req.statusText?.trim();
  if (statusText !== undefined && codePointLength(statusText) > MAX_STATUS_TEXT_LENGTH) {
    throw badRequest(`status_text is too long (limit: ${MAX_STATUS_TEXT_LENGTH} characters)`);
  }
  if (req.away === undefined && statusText === undefined && req.emojiName === undefined) throw badRequest('Client did not pass any new values.');
  const out: PreparedStatus = { away: req.away, statusText };
  if (req.emojiName === '') {
    // An empty name clears the emoji.
    out.emoji = { name: '', code: '', type: 'unicode_emoji' };
  } else if (req.emojiName !== undefined) {
    const db = services.db.kysely;
    let { emojiCode: code, reactionType: type } = req;
    if (code === undefined || type === undefined) {
      const data = emojiDataForName(await fetchActiveRealmEmoji(db, realm.id), req.emojiName);
      code ??= data.emojiCode;
      type ??= data.reactionType;
    }
    checkEmojiRequest(await fetchRealmEmoji(db, realm.id), req.emojiName, code, type);
    out.emoji = { name: req.emojiName, code, type };
  } else if (req.emojiCode || req.reactionType) {
    throw badRequest('Client must pass emoji_name if they pass either emoji_code or reaction_type.');
  }
  return out;
}

/**
 * Zulip's do_update_user_status: `away` is the legacy switch for presence_enabled; the status
 * row keeps the parts not given. Everyone who can see the user gets a `user_status` event
 * carrying the parts that were given.
 */
export async function doUpdateUserStatus(services: ActionServices, realm: Realm, user: User, s: PreparedStatus): Promise<void> {
  if (s.away !== undefined) await doChangeUserSettings(services, realm, user, { settings: { presence_enabled: !s.away } }, user);
  await transaction(services.db, async (tx, afterCommit) => {
    const current = await fetchUserStatus(tx, user.id);
    await upsertUserStatus(tx, {
      user_id: user.id,
      status_text: s.statusText ?? current?.status_text ?? '',
      emoji_name: s.emoji?.name ?? current?.emoji_name ?? '',
      emoji_code: s.emoji?.code ?? current?.emoji_code ?? '',
      reaction_type: s.emoji?.type ?? current?.reaction_type ?? 'unicode_emoji',
      timestamp: now(),
    });
    const event: ZulipEvent = { type: 'user_status', user_id: user.id };
    if (s.away !== undefined) event.away = s.away;
    if (s.statusText !== undefined) event.status_text = s.statusText;
    if (s.emoji) Object.assign(event, { emoji_name: s.emoji.name, emoji_code: s.emoji.code, reaction_type: s.emoji.type });
    const recipients = await userIdsWhoCanAccess(tx, realm, user);
    afterCommit(() => services.events.send(realm.id, event, recipients));
  });
}
