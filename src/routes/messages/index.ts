import type { FastifyInstance } from 'fastify';
import { adminRequired, badRequest, missingParam } from '../../errors.js';
import type { Services } from '../../services.js';
import {
  DEFAULT_HISTORICAL_FLAGS,
  checkDeleteMessage,
  checkFlagName,
  checkSendMessage,
  checkUpdateMessage,
  doDeleteMessage,
  doUpdateMessage,
  type PropagateMode,
  checkUpdateMessageFlags,
  doDeleteTopic,
  doMarkAllAsRead,
  doMarkStreamMessagesAsRead,
  doSendMessage,
  doUpdateMessageFlags,
  fetchReadReceipts,
  fetchTopicHistory,
  messageLinks,
} from '../../actions/messages.js';
import { doSetUserTopicVisibilityPolicy } from '../../actions/user_topics.js';
import { userHasMessageInTopic } from '../../db/repos/user_messages.js';
import { fetchStreamById, fetchStreamByName } from '../../db/repos/streams.js';
import type { Realm, Stream } from '../../db/tables.js';
import { accessMessage } from '../../lib/access/messages.js';
import { ChannelCaller, accessStreamById, accessStreamByName } from '../../lib/access/streams.js';
import { formatMessages } from '../../lib/format/messages.js';
import { realmSettings } from '../../lib/realm_settings.js';
import { isAdmin } from '../../lib/roles.js';
import { VISIBILITY_INHERIT, VISIBILITY_MUTED, VISIBILITY_POLICIES, mapEmptyTopicAliases, topicKey } from '../../lib/topics.js';
import { realmUrl } from '../../lib/urls.js';
import { MAX_TOPIC_LENGTH } from '../../version.js';
import { endpoint } from '../endpoint.js';
import { p, zInt } from '../params.js';
import { registerMessageFetchRoutes } from './fetch.js';
import { registerScheduledMessageRoutes } from './scheduled.js';
import { checkReportMessage, doReportMessage } from '../../actions/message_reports.js';
import { MAX_REPORT_MESSAGE_EXPLANATION_LENGTH } from '../../lib/message_report.js';
import { parseAnchor } from '../../lib/narrow/anchor.js';
import { fetchMessagesForNarrow } from '../../lib/narrow/fetch.js';
import { decodeNarrowParam } from '../../lib/narrow/terms.js';
import { z } from 'zod';

/** Message IDs one POST /messages/flags may name. */
export const MAX_FLAG_UPDATE_MESSAGES = 10_000;

const MESSAGE_TYPES: Record<string, 'stream' | 'private'> = { stream: 'stream', channel: 'stream', private: 'private', direct: 'private' };

/** Zulip's check_capped_string for topics in per-topic preferences. */
const cappedTopic = () => p.str(z.string().max(MAX_TOPIC_LENGTH));

/** Zulip's MAX_MESSAGES_PER_UPDATE for POST /messages/flags/narrow. */
const MAX_MESSAGES_PER_UPDATE = 5000;

/** Zulip gives mark-all-as-read 50 seconds before answering complete: false. */
const MARK_ALL_AS_READ_BUDGET_MS = 50_000;

/**
 * Clearing a topic preference only needs the channel to exist in the realm: users may always
 * forget preferences, even for channels they lost access to (Zulip's
 * access_stream_to_remove_visibility_policy_by_id / _by_name).
 */
async function streamForRemoval(services: Services, realm: Realm, key: { id: number } | { name: string }, error: string): Promise<Stream> {
  const db = services.db.kysely;
  const stream = 'id' in key ? await fetchStreamById(db, realm.id, key.id) : await fetchStreamByName(db, realm.id, key.name);
  if (!stream) throw badRequest(error);
  return stream;
}

export function registerMessageRoutes(app: FastifyInstance, services: Services): void {
  registerMessageFetchRoutes(app, services);
  registerScheduledMessageRoutes(app, services);
  endpoint(app, services, {
    method: 'POST',
    path: '/messages',
    allowIncomingWebhooks: true,
    params: {
      type: p.str(),
      to: p.str().optional(),
      content: p.str(),
      topic: p.str().optional().alias('subject'),
      queue_id: p.str().optional(),
      local_id: p.str().optional(),
      read_by_sender: p.bool().optional(),
    },
    handler: async ({ params, realm, user, client }) => {
      const type = MESSAGE_TYPES[params.type];
      if (!type) throw badRequest('Invalid type');
      // Local echo needs both: the queue to answer on and the ID to answer with.
      if (params.queue_id !== undefined && params.local_id === undefined) throw missingParam('local_id');
      if (params.local_id !== undefined && params.queue_id === undefined) throw missingParam('queue_id');
      const prepared = await checkSendMessage(services, realm, user, {
        type,
        to: params.to,
        topic: params.topic,
        content: params.content,
        client,
        queueId: params.queue_id,
        localId: params.local_id,
        readBySender: params.read_by_sender,
      });
      const sent = await doSendMessage(services, prepared);
      return {
        id: sent.id,
        ...messageLinks(services, prepared, sent.id),
        ...(sent.automaticNewVisibilityPolicy !== undefined ? { automatic_new_visibility_policy: sent.automaticNewVisibilityPolicy } : {}),
      };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/messages/:message_id/report',
    params: {
      message_id: p.int(),
      report_type: p.str(),
      description: p.str(z.string().max(MAX_REPORT_MESSAGE_EXPLANATION_LENGTH)).default(''),
    },
    handler: async ({ params, realm, user }) => {
      const prepared = await checkReportMessage(services, realm, user, params.message_id, params.report_type, params.description);
      await doReportMessage(services, prepared);
      return {};
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/messages/:message_id',
    params: {
      message_id: p.int(),
      apply_markdown: p.bool().default(true),
      allow_empty_topic_name: p.bool().default(false),
    },
    handler: async ({ params, realm, user }) => {
      const db = services.db.kysely;
      const { message, flags } = await accessMessage(db, realm, user, params.message_id);
      const [dict] = await formatMessages(
        db,
        realm,
        realmUrl(services.config, realm),
        [message],
        {
          applyMarkdown: params.apply_markdown,
          clientGravatar: false,
          allowEmptyTopicName: params.allow_empty_topic_name,
          emptyTopicDisplayName: realmSettings(realm).empty_topic_display_name,
          editHistoryVisibility: realmSettings(realm).message_edit_history_visibility_policy,
        },
        undefined,
        flags ?? DEFAULT_HISTORICAL_FLAGS,
      );
      return { raw_content: message.content, message: dict };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/messages/:message_id',
    params: {
      message_id: p.int(),
      content: p.str().optional(),
      topic: p.str().optional().alias('subject'),
      propagate_mode: p.str(z.enum(['change_one', 'change_later', 'change_all'])).default('change_one'),
      send_notification_to_old_thread: p.bool().default(false),
      send_notification_to_new_thread: p.bool().default(true),
      stream_id: p.int().optional(),
      prev_content_sha256: p.str().optional(),
    },
    handler: async ({ params, realm, user }) => {
      const edit = await checkUpdateMessage(services, realm, user, params.message_id, {
        content: params.content,
        topic: params.topic,
        propagateMode: params.propagate_mode as PropagateMode,
        streamId: params.stream_id,
        prevContentSha256: params.prev_content_sha256,
        sendNotificationToOldThread: params.send_notification_to_old_thread,
        sendNotificationToNewThread: params.send_notification_to_new_thread,
      });
      await doUpdateMessage(services, edit);
      return { detached_uploads: [] };
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/messages/:message_id',
    params: { message_id: p.int() },
    handler: async ({ params, realm, user }) => {
      const { message, stream } = await checkDeleteMessage(services, realm, user, params.message_id);
      await doDeleteMessage(services, realm, message, stream);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/messages/:message_id/read_receipts',
    params: { message_id: p.int() },
    handler: async ({ params, realm, user }) => {
      const db = services.db.kysely;
      const { message } = await accessMessage(db, realm, user, params.message_id);
      if (!realmSettings(realm).enable_read_receipts) throw badRequest('Read receipts are disabled in this organization.');
      return { user_ids: await fetchReadReceipts(db, message) };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/messages/flags',
    params: { messages: p.intList(), op: p.str(), flag: p.str() },
    handler: async ({ params, realm, user }) => {
      // Bounds the work of one request; clients send flag changes in batches far below this.
      if (params.messages.length > MAX_FLAG_UPDATE_MESSAGES) {
        throw badRequest(`Too many messages (maximum ${MAX_FLAG_UPDATE_MESSAGES})`);
      }
      const { flag, op } = checkFlagName(params.flag, params.op);
      const change = await checkUpdateMessageFlags(services, realm, user, op, flag, params.messages);
      await doUpdateMessageFlags(services, realm, user, change);
      return {
        messages: params.messages,
        ...(change.ignoredChannels !== null ? { ignored_because_not_subscribed_channels: change.ignoredChannels } : {}),
      };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/messages/flags/narrow',
    params: {
      anchor: p.str(),
      include_anchor: p.bool().default(true),
      num_before: p.int(zInt.min(0)),
      num_after: p.int(zInt.min(0)),
      narrow: p.custom((raw, name) => (raw.trim() === 'null' ? [] : decodeNarrowParam(raw, name))),
      op: p.str(),
      flag: p.str(),
    },
    handler: async ({ params, realm, user }) => {
      const anchor = parseAnchor(params.anchor, false, undefined);
      if (params.num_before > 0 && params.num_after > 0 && !params.include_anchor) {
        throw badRequest('The anchor can only be excluded at an end of the range');
      }
      // Zulip clamps the range to MAX_MESSAGES_PER_UPDATE (5000) messages.
      const numBefore = Math.min(params.num_before, Math.max(MAX_MESSAGES_PER_UPDATE - params.num_after, MAX_MESSAGES_PER_UPDATE / 2));
      const numAfter = Math.min(params.num_after, MAX_MESSAGES_PER_UPDATE - numBefore);
      const range = await fetchMessagesForNarrow(services.db, realm, realmUrl(services.config, realm), user, {
        narrow: params.narrow,
        anchor,
        messageIds: null,
        includeAnchor: params.include_anchor,
        numBefore,
        numAfter,
        applyMarkdown: false,
        clientGravatar: true,
        allowEmptyTopicName: true,
      });
      const ids = range.messages.map((m) => m.id);
      const { flag, op } = checkFlagName(params.flag, params.op);
      const change = await checkUpdateMessageFlags(services, realm, user, op, flag, ids);
      await doUpdateMessageFlags(services, realm, user, change);
      return {
        processed_count: ids.length,
        updated_count: change.messages.length,
        first_processed_id: ids[0] ?? null,
        last_processed_id: ids[ids.length - 1] ?? null,
        found_oldest: range.found_oldest,
        found_newest: range.found_newest,
        ...(change.ignoredChannels !== null ? { ignored_because_not_subscribed_channels: change.ignoredChannels } : {}),
      };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/mark_all_as_read',
    params: {},
    handler: async ({ realm, user }) => ({ complete: await doMarkAllAsRead(services, realm, user, MARK_ALL_AS_READ_BUDGET_MS) }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/mark_stream_as_read',
    params: { stream_id: p.int() },
    handler: async ({ params, realm, user }) => {
      const { stream } = await accessStreamById(new ChannelCaller(services.db.kysely, realm, user), params.stream_id);
      await doMarkStreamMessagesAsRead(services, realm, user, stream.id);
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/mark_topic_as_read',
    params: { stream_id: p.int(), topic_name: p.str() },
    handler: async ({ params, realm, user }) => {
      const db = services.db.kysely;
      const { stream } = await accessStreamById(new ChannelCaller(db, realm, user), params.stream_id);
      // As in Zulip, an empty topic_name marks the whole channel read (the legacy meaning).
      if (params.topic_name === '') {
        await doMarkStreamMessagesAsRead(services, realm, user, stream.id);
        return;
      }
      const topic = mapEmptyTopicAliases(params.topic_name, realmSettings(realm).empty_topic_display_name);
      if (!(await userHasMessageInTopic(db, user.id, stream.id, topicKey(topic)))) throw badRequest(`No such topic '${params.topic_name}'`);
      await doMarkStreamMessagesAsRead(services, realm, user, stream.id, topic);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/users/me/:stream_id/topics',
    params: { stream_id: p.int(), allow_empty_topic_name: p.bool().default(false) },
    handler: async ({ params, realm, user }) => {
      const db = services.db.kysely;
      const { stream } = await accessStreamById(new ChannelCaller(db, realm, user), params.stream_id);
      const display = realmSettings(realm).empty_topic_display_name;
      return { topics: await fetchTopicHistory(db, user, stream, params.allow_empty_topic_name, display) };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/user_topics',
    params: {
      stream_id: p.int(),
      topic: cappedTopic(),
      visibility_policy: p.int(zInt.refine((v) => (VISIBILITY_POLICIES as readonly number[]).includes(v), 'Invalid visibility_policy')),
    },
    handler: async ({ params, realm, user }) => {
      const caller = new ChannelCaller(services.db.kysely, realm, user);
      const stream =
        params.visibility_policy === VISIBILITY_INHERIT
          ? await streamForRemoval(services, realm, { id: params.stream_id }, 'Invalid channel ID')
          : (await accessStreamById(caller, params.stream_id)).stream;
      const topic = mapEmptyTopicAliases(params.topic, realmSettings(realm).empty_topic_display_name);
      await doSetUserTopicVisibilityPolicy(services, { realmId: realm.id, streamId: stream.id, topic }, user.id, params.visibility_policy);
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/users/me/subscriptions/muted_topics',
    params: {
      stream_id: p.int().optional(),
      stream: p.str().optional(),
      topic: cappedTopic(),
      op: p.str(z.enum(['add', 'remove'])),
    },
    handler: async ({ params, realm, user }) => {
      if (params.stream_id === undefined && params.stream === undefined) throw badRequest("Missing 'stream_id' argument");
      if (params.stream_id !== undefined && params.stream !== undefined) throw badRequest('Unsupported parameter combination: stream_id, stream');
      const caller = new ChannelCaller(services.db.kysely, realm, user);
      const key: { id: number } | { name: string } = params.stream_id !== undefined ? { id: params.stream_id } : { name: params.stream! };
      let stream: Stream;
      if (params.op === 'remove') stream = await streamForRemoval(services, realm, key, 'Topic is not muted');
      else stream = ('id' in key ? await accessStreamById(caller, key.id) : await accessStreamByName(caller, key.name)).stream;
      const topic = mapEmptyTopicAliases(params.topic, realmSettings(realm).empty_topic_display_name);
      // Idempotent since feature level 169: muting a muted topic (or unmuting one that is not) succeeds.
      const policy = params.op === 'add' ? VISIBILITY_MUTED : VISIBILITY_INHERIT;
      await doSetUserTopicVisibilityPolicy(services, { realmId: realm.id, streamId: stream.id, topic }, user.id, policy);
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/streams/:stream_id/delete_topic',
    params: { stream_id: p.int(), topic_name: p.str() },
    authorize: (user) => {
      if (!isAdmin(user)) throw adminRequired();
    },
    handler: async ({ params, realm, user }) => {
      const { stream } = await accessStreamById(new ChannelCaller(services.db.kysely, realm, user), params.stream_id);
      const topic = mapEmptyTopicAliases(params.topic_name, realmSettings(realm).empty_topic_display_name);
      return { complete: await doDeleteTopic(services, realm, user, stream, topic, services.config.deleteTopic) };
    },
  });
}
