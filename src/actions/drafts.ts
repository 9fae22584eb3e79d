import { transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import {
  deleteDraftRow,
  fetchUserDraft,
  insertDrafts,
  updateDraftRow,
  type DraftRow,
} from '../db/repos/drafts.js';
import { fetchUsersByIds } from '../db/repos/users.js';
import { JsonableError, badRequest } from '../errors.js';
import { ChannelCaller, accessStreamById } from '../lib/access/streams.js';
import { formatDraft, type DraftType } from '../lib/format/drafts.js';
import { truncateTopic } from '../lib/topics.js';
import { userSettings } from '../lib/user_settings.js';
import type { ActionServices } from '../services.js';
import { normalizeMessageContent } from './messages.js';

/** A draft as a client sends it, already checked for shape (Zulip's DraftData). */
export interface DraftInput {
  type: DraftType;
  to: number[];
  topic: string;
  /** Stripped of surrounding whitespace and non-empty. */
  content: string;
  timestamp?: number;
}

/** A draft ready to store: recipients resolved, text normalized, time in whole seconds. */
export interface CheckedDraft {
  type: DraftType;
  to: number[];
  topic: string;
  content: string;
  lastEditTime: number;
}

/** Zulip's draft_endpoint: every draft endpoint refuses while synchronization is off. */
export function checkDraftsSynchronization(user: User): void {
  if (!userSettings(user).enable_drafts_synchronization) throw badRequest('User has disabled synchronizing drafts.');
}

/**
 * Zulip's further_validated_draft_dict: channel drafts name exactly one channel the user
 * can access; direct-message drafts name existing users (stored, as Zulip shows them, as
 * the other participants, or the user alone for a note to self); a direct-message draft
 * with no recipients and an unaddressed draft become unaddressed with no topic.
 */
export async function checkDraft(services: ActionServices, realm: Realm, user: User, draft: DraftInput): Promise<CheckedDraft> {
  const content = normalizeMessageContent(draft.content);
  const timestamp = draft.timestamp ?? Date.now() / 1000;
  if (timestamp < 0) throw badRequest('Timestamp must not be negative.');
  const lastEditTime = Math.floor(timestamp);
  if (draft.type === 'stream') {
    const topic = truncateTopic(draft.topic);
    if (topic.includes('\0')) throw badRequest('Topic must not contain null bytes');
    if (draft.to.length !== 1) throw badRequest('Must specify exactly 1 channel ID for channel messages');
    const { stream } = await accessStreamById(new ChannelCaller(services.db.kysely, realm, user), draft.to[0]!);
    return { type: 'stream', to: [stream.id], topic, content, lastEditTime };
  }
  if (draft.type === 'private' && draft.to.length > 0) {
    const ids = [...new Set(draft.to)];
    const found = new Set((await fetchUsersByIds(services.db.kysely, realm.id, ids)).map((u) => u.id));
    const missing = ids.find((id) => !found.has(id));
    if (missing !== undefined) throw badRequest(`Invalid user ID ${missing}`);
    const others = ids.filter((id) => id !== user.id).sort((a, b) => a - b);
    return { type: 'private', to: others.length > 0 ? others : [user.id], topic: '', content, lastEditTime };
  }
  return { type: '', to: [], topic: '', content, lastEditTime };
}

const draftColumns = (d: CheckedDraft) => ({ type: d.type, to: JSON.stringify(d.to), topic: d.topic, content: d.content, last_edit_time: d.lastEditTime });

/** Zulip answers a missing (or someone else's) draft with 404 and code BAD_REQUEST. */
export async function accessDraft(services: ActionServices, user: User, draftId: number): Promise<DraftRow> {
  const row = await fetchUserDraft(services.db.kysely, user.id, draftId);
  if (!row) throw new JsonableError('Draft does not exist', 'BAD_REQUEST', 404);
  return row;
}

/** Creates the drafts in order and returns their IDs; the user's clients get one `add` event. */
export async function doCreateDrafts(services: ActionServices, user: User, drafts: readonly CheckedDraft[]): Promise<number[]> {
  return transaction(services.db, async (tx, afterCommit) => {
    const rows = await insertDrafts(tx, drafts.map((d) => ({ user_id: user.id, ...draftColumns(d) })));
    afterCommit(() => services.events.send(user.realm_id, { type: 'drafts', op: 'add', drafts: rows.map(formatDraft) }, [user.id]));
    return rows.map((r) => r.id);
  });
}

export async function doEditDraft(services: ActionServices, user: User, draft: DraftRow, changes: CheckedDraft): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    const row = await updateDraftRow(tx, draft.id, draftColumns(changes));
    afterCommit(() => services.events.send(user.realm_id, { type: 'drafts', op: 'update', draft: formatDraft(row) }, [user.id]));
  });
}

export async function doDeleteDraft(services: ActionServices, user: User, draft: DraftRow): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deleteDraftRow(tx, draft.id);
    afterCommit(() => services.events.send(user.realm_id, { type: 'drafts', op: 'remove', draft_id: draft.id }, [user.id]));
  });
}
