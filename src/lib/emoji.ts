import type { RealmEmojiRow } from '../db/repos/realm_emoji.js';
import { badRequest } from '../errors.js';
import { emojiCodeToName, emojiNameToCode, ZULIP_EXTRA_EMOJI } from './markdown/index.js';

/** Zulip's Reaction.REACTION_TYPES. */
export const REACTION_TYPES = ['unicode_emoji', 'realm_emoji', 'zulip_extra_emoji'] as const;
export type ReactionType = (typeof REACTION_TYPES)[number];

export interface EmojiData {
  emojiCode: string;
  reactionType: ReactionType;
}

/**
 * Zulip's get_emoji_data: what an emoji name alone means in this realm. An active custom emoji
 * wins over a Unicode emoji of the same name (administrators may override built-in names).
 */
export function emojiDataForName(activeRealmEmoji: readonly Pick<RealmEmojiRow, 'id' | 'name'>[], name: string): EmojiData {
  const custom = activeRealmEmoji.find((e) => e.name === name);
  if (custom) return { emojiCode: String(custom.id), reactionType: 'realm_emoji' };
  if (name === ZULIP_EXTRA_EMOJI.name) return { emojiCode: ZULIP_EXTRA_EMOJI.code, reactionType: 'zulip_extra_emoji' };
  const code = emojiNameToCode(name);
  if (code !== undefined) return { emojiCode: code, reactionType: 'unicode_emoji' };
  throw badRequest(`Emoji '${name}' does not exist`);
}

/**
 * Zulip's check_emoji_request: whether (name, code, type) may start a new reaction.
 *
 * Unicode emoji are validated by their code. Our name table reproduces Zulip's curated names
 * only for the common emoji (see markdown/emoji.ts), so a name we do not know is accepted
 * with a valid code; a name we know for a different emoji is refused, as in Zulip.
 */
export function checkEmojiRequest(
  allRealmEmoji: readonly Pick<RealmEmojiRow, 'id' | 'name' | 'deactivated'>[],
  name: string,
  code: string,
  type: string,
): void {
  if (type === 'realm_emoji') {
    const emoji = allRealmEmoji.find((e) => String(e.id) === code);
    if (!emoji) throw badRequest('Invalid custom emoji.');
    if (emoji.name !== name) throw badRequest('Invalid custom emoji name.');
    if (emoji.deactivated) throw badRequest('This custom emoji has been deactivated.');
  } else if (type === 'zulip_extra_emoji') {
    if (code !== ZULIP_EXTRA_EMOJI.code) throw badRequest('Invalid emoji code.');
    if (name !== code) throw badRequest('Invalid emoji name.');
  } else if (type === 'unicode_emoji') {
    if (emojiCodeToName(code) === undefined) throw badRequest('Invalid emoji code.');
    const named = emojiNameToCode(name);
    if (named !== undefined ? named !== code : !/^[a-z0-9_+-]+$/.test(name)) throw badRequest('Invalid emoji name.');
  } else {
    throw badRequest('Invalid emoji type.');
  }
}

/** Zulip's check_valid_emoji_name, for custom emoji. */
export function checkValidEmojiName(name: string): void {
  if (!name) throw badRequest('Emoji name is missing');
  if (/^[0-9a-z\-_]+$/.test(name)) {
    if (/[-_]$/.test(name)) throw badRequest('Emoji names must end with either a letter or digit.');
    return;
  }
  throw badRequest('Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.');
}
