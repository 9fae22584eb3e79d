import { transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchWidgetContent, hasSubmessageFrom, insertSubmessage } from '../db/repos/submessages.js';
import { badRequest } from '../errors.js';
import { validatePollData, validateTodoData, widgetTypeOf } from '../lib/widgets.js';
import type { ActionServices } from '../services.js';
import { accessMessageForModification, messageActionRecipientIds, participationPolicy, type ModifiableMessage } from './reactions.js';
import { setUserTopicPolicies } from './user_topics.js';

export interface PreparedSubmessage {
  target: ModifiableMessage;
  msgType: string;
  content: string;
}

/**
 * Zulip's process_submessage: the message must be one the user may act on; the first
 * submessage must be its sender's (verify_submessage_sender); the content must be JSON and,
 * on a poll or to-do list, one of that widget's events.
 */
export async function checkAddSubmessage(services: ActionServices, realm: Realm, user: User, messageId: number, msgType: string, content: string): Promise<PreparedSubmessage> {
  const db = services.db.kysely;
  const target = await accessMessageForModification(db, realm, user, messageId);
  const { message } = target;
  if (message.sender_id !== user.id && !(await hasSubmessageFrom(db, message.id, message.sender_id))) {
    throw badRequest('You cannot attach a submessage to this message.');
  }
  let data: unknown;
  try {
    data = JSON.parse(content);
  } catch {
    throw badRequest('Invalid json for submessage');
  }
  const widgetType = widgetTypeOf(await fetchWidgetContent(db, message.id));
  const isWidgetAuthor = message.sender_id === user.id;
  if (widgetType === 'poll') validatePollData(data, isWidgetAuthor);
  if (widgetType === 'todo') validateTodoData(data, isWidgetAuthor);
  return { target, msgType, content };
}

/**
 * Zulip's do_add_submessage: stores it, applies the participation topic policy (as a
 * reaction does), and sends the `submessage` event to everyone who has the message.
 */
export async function doAddSubmessage(services: ActionServices, realm: Realm, user: User, s: PreparedSubmessage): Promise<void> {
  const { message, stream } = s.target;
  await transaction(services.db, async (tx, afterCommit) => {
    const row = await insertSubmessage(tx, { message_id: message.id, sender_id: user.id, msg_type: s.msgType, content: s.content });
    const policy = await participationPolicy(tx, user, message);
    if (policy !== null) {
      await setUserTopicPolicies(services, tx, afterCommit, { realmId: realm.id, streamId: message.stream_id ?? 0, topic: message.topic }, [user.id], policy);
    }
    const recipients = await messageActionRecipientIds(tx, message, stream);
    const event = { type: 'submessage', msg_type: s.msgType, message_id: message.id, submessage_id: row.id, sender_id: user.id, content: s.content };
    afterCommit(() => services.events.send(realm.id, event, recipients));
  });
}
