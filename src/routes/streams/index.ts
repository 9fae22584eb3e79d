import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../services.js';
import type { Realm, Stream, User } from '../../db/tables.js';
import { adminRequired, badRequest, insufficientPermission, ownerRequired } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { doGetChannelEmailAddress } from '../../actions/email_gateway.js';
import { p } from '../params.js';
import { fetchDefaultStreamIds, fetchRealmStreams, fetchStreamsByIds } from '../../db/repos/streams.js';
import {
  fetchSubscribedStreamIdSet,
  fetchSubscriberIdsByStream,
  fetchSubscriptionRow,
  fetchUserSubscriptionRows,
} from '../../db/repos/subscriptions.js';
import {
  ChannelCaller,
  accessStreamById,
  accessStreamByName,
  accessStreamForAdministration,
  channelCreationRights,
  channelPermissions,
  type ChannelPermission,
} from '../../lib/access/streams.js';
import { accessUserById } from '../../lib/access/users.js';
import { fetchStreamFormatContext, formatStream, formatSubscription } from '../../lib/format/streams.js';
import { checkGroupSettingChange, type GroupSettingUpdate, type GroupSettingValue } from '../../lib/group_settings.js';
import { realmSettings } from '../../lib/realm_settings.js';
import { isAdmin, isGuest, isOwner } from '../../lib/roles.js';
import {
  checkAddSubscriptions,
  checkCreateChannel,
  checkChannelSettingValues,
  checkRemoveSubscriptions,
  checkStreamRename,
  checkSubscriptionPropertyChange,
  checkTopicsPolicy,
  cleanStreamDescription,
  doAddDefaultStream,
  doAddSubscriptions,
  doArchiveStream,
  doChangeStreamFolder,
  doChangeStreamDescription,
  doChangeStreamGroupSetting,
  doChangeStreamPermission,
  doChangeSubscriptionProperty,
  doRemoveDefaultStream,
  doRemoveSubscriptions,
  doRenameStream,
  doSetStreamMessageRetentionDays,
  doSetStreamTopicsPolicy,
  doUnarchiveStream,
  parseMessageRetentionDays,
} from '../../actions/streams.js';
import {
  channelSettingUpdateParams,
  channelSettingValueParams,
  descriptionSchema,
  includeSubscribersParam,
  jsonOrRawParam,
  pickChannelSettings,
  principalsParam,
  subscriptionItemSchema,
  subscriptionPropertyChangeSchema,
  topicsPolicyParam,
} from './params.js';
import { registerChannelFolderRoutes } from './channel_folders.js';
import { accessChannelFolder } from '../../actions/channel_folders.js';

const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

const requireAdmin = (user: User): void => {
  if (!isAdmin(user)) throw adminRequired();
};

export function registerStreamRoutes(app: FastifyInstance, services: Services): void {
  const db = services.db.kysely;
  registerChannelFolderRoutes(app, services);
  const callerFor = (realm: Realm, user: User): ChannelCaller => new ChannelCaller(db, realm, user);

  endpoint(app, services, {
    method: 'GET',
    path: '/users/me/subscriptions',
    params: { include_subscribers: includeSubscribersParam() },
    handler: async ({ realm, user, params }) => {
      const rows = (await fetchUserSubscriptionRows(db, user.id)).filter((r) => r.active);
      const streams = (await fetchStreamsByIds(db, realm.id, rows.map((r) => r.stream_id))).filter((s) => !s.deactivated);
      const subscribers = await fetchSubscriberIdsByStream(db, streams.map((s) => s.id));
      const ctx = await fetchStreamFormatContext(db, realm.id, streams, subscribers);
      const rowOf = new Map(rows.map((r) => [r.stream_id, r]));
      const subscriptions = streams
        .sort(byName)
        .map((s) => formatSubscription(s, rowOf.get(s.id)!, ctx, params.include_subscribers ? subscribers.get(s.id) : undefined));
      return { subscriptions };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/subscriptions',
    params: {
      subscriptions: p.json(z.array(subscriptionItemSchema)),
      principals: principalsParam(),
      authorization_errors_fatal: p.bool().default(true),
      announce: p.bool().default(false),
      invite_only: p.bool().default(false),
      is_web_public: p.bool().default(false),
      is_default_stream: p.bool().default(false),
      history_public_to_subscribers: p.bool().optional(),
      message_retention_days: jsonOrRawParam(),
      topics_policy: topicsPolicyParam(),
      folder_id: p.json(z.number().int()).optional(),
      send_new_subscription_messages: p.bool().optional(),
      ...channelSettingValueParams(),
    },
    handler: async ({ realm, user, params }) => {
      const caller = callerFor(realm, user);
      const folderId = params.folder_id === undefined ? null : (await accessChannelFolder(db, realm, params.folder_id)).id;
      const { plan, unauthorized } = await checkAddSubscriptions(services, caller, {
        subscriptions: params.subscriptions,
        principals: params.principals,
        authorizationErrorsFatal: params.authorization_errors_fatal,
        inviteOnly: params.invite_only,
        isWebPublic: params.is_web_public,
        isDefaultStream: params.is_default_stream,
        historyPublicToSubscribers: params.history_public_to_subscribers,
        messageRetentionDays: parseMessageRetentionDays(params.message_retention_days ?? 'realm_default'),
        topicsPolicy: params.topics_policy,
        folderId,
        permissions: pickChannelSettings<GroupSettingValue>(params),
      });
      const result = await doAddSubscriptions(services, realm, user, plan);
      const subscribed: Record<string, string[]> = {};
      const alreadySubscribed: Record<string, string[]> = {};
      for (const { user: u, stream } of result.subscribed) (subscribed[String(u.id)] ??= []).push(stream.name);
      for (const { user: u, stream } of result.alreadySubscribed) (alreadySubscribed[String(u.id)] ??= []).push(stream.name);
      const out: Record<string, unknown> = { subscribed, already_subscribed: alreadySubscribed };
      if (!params.authorization_errors_fatal) out.unauthorized = unauthorized;
      // Parley has no Notification Bot, so it never sends these direct messages.
      if (params.send_new_subscription_messages) out.new_subscription_messages_sent = false;
      return out;
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/channels/create',
    params: {
      name: p.str(),
      description: p.str(descriptionSchema).default(''),
      subscribers: p.json(z.array(z.number().int())),
      announce: p.bool().default(false),
      invite_only: p.bool().default(false),
      is_web_public: p.bool().default(false),
      is_default_stream: p.bool().default(false),
      history_public_to_subscribers: p.bool().optional(),
      message_retention_days: jsonOrRawParam(),
      topics_policy: topicsPolicyParam(),
      folder_id: p.json(z.number().int()).optional(),
      ...channelSettingValueParams(),
    },
    handler: async ({ realm, user, params }) => {
      const caller = callerFor(realm, user);
      const folderId = params.folder_id === undefined ? null : (await accessChannelFolder(db, realm, params.folder_id)).id;
      const plan = await checkCreateChannel(services, caller, {
        name: params.name,
        description: params.description,
        subscribers: params.subscribers,
        inviteOnly: params.invite_only,
        isWebPublic: params.is_web_public,
        isDefaultStream: params.is_default_stream,
        historyPublicToSubscribers: params.history_public_to_subscribers,
        messageRetentionDays: parseMessageRetentionDays(params.message_retention_days ?? 'realm_default'),
        topicsPolicy: params.topics_policy,
        folderId,
        permissions: pickChannelSettings<GroupSettingValue>(params),
      });
      const result = await doAddSubscriptions(services, realm, user, plan);
      return { id: result.created[0]!.id };
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/users/me/subscriptions',
    params: { subscriptions: p.strList(), principals: principalsParam() },
    handler: async ({ realm, user, params }) => {
      const caller = callerFor(realm, user);
      const { users, streams } = await checkRemoveSubscriptions(services, caller, params.subscriptions, params.principals);
      const result = await doRemoveSubscriptions(services, realm, user, users, streams);
      return { removed: result.removed.map((r) => r.stream.name), not_removed: result.notRemoved.map((r) => r.stream.name) };
    },
  });

  // The older combined endpoint: subscribe to `add` and unsubscribe from `delete` at once.
  endpoint(app, services, {
    method: 'PATCH',
    path: '/users/me/subscriptions',
    params: {
      add: p.json(z.array(subscriptionItemSchema)).default([]),
      delete: p.strList().default([]),
    },
    handler: async ({ realm, user, params }) => {
      if (params.add.length === 0 && params.delete.length === 0) {
        throw badRequest('Nothing to do. Specify at least one of "add" or "delete".');
      }
      const caller = callerFor(realm, user);
      const adding = params.add.length
        ? await checkAddSubscriptions(services, caller, {
            subscriptions: params.add,
            authorizationErrorsFatal: true,
            inviteOnly: false,
            isWebPublic: false,
            isDefaultStream: false,
            messageRetentionDays: null,
            permissions: {},
          })
        : null;
      const removing = params.delete.length ? await checkRemoveSubscriptions(services, caller, params.delete, undefined) : null;
      const subscribed: Record<string, string[]> = {};
      const alreadySubscribed: Record<string, string[]> = {};
      if (adding) {
        const result = await doAddSubscriptions(services, realm, user, adding.plan);
        for (const { user: u, stream } of result.subscribed) (subscribed[String(u.id)] ??= []).push(stream.name);
        for (const { user: u, stream } of result.alreadySubscribed) (alreadySubscribed[String(u.id)] ??= []).push(stream.name);
      }
      const removal = removing ? await doRemoveSubscriptions(services, realm, user, removing.users, removing.streams) : { removed: [], notRemoved: [] };
      return {
        subscribed,
        already_subscribed: alreadySubscribed,
        removed: removal.removed.map((r) => r.stream.name),
        not_removed: removal.notRemoved.map((r) => r.stream.name),
      };
    },
  });

  const changeProperties = async (realm: Realm, user: User, changes: { stream_id: number; property: string; value: boolean | string }[]) => {
    const caller = callerFor(realm, user);
    const checked = [];
    for (const change of changes) {
      const { property, value } = checkSubscriptionPropertyChange(change.property, change.value);
      const { stream } = await accessStreamById(caller, change.stream_id, { requireActive: false });
      const sub = await fetchSubscriptionRow(db, user.id, stream.id);
      if (!sub?.active) throw badRequest(`Not subscribed to channel ID ${change.stream_id}`);
      checked.push({ stream, sub, property, value });
    }
    for (const c of checked) {
      const sub = (await fetchSubscriptionRow(db, user.id, c.stream.id))!;
      await doChangeSubscriptionProperty(services, realm, user, c.stream, sub, c.property, c.value);
    }
  };

  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/subscriptions/properties',
    params: { subscription_data: p.json(z.array(subscriptionPropertyChangeSchema)) },
    handler: async ({ realm, user, params }) => {
      await changeProperties(realm, user, params.subscription_data);
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/users/me/subscriptions/:stream_id',
    params: {
      stream_id: p.int(),
      property: p.str(),
      // Json[bool] or a raw string (a color).
      value: p.custom<boolean | string>((raw) => (raw === 'true' ? true : raw === 'false' ? false : raw)),
    },
    handler: async ({ realm, user, params }) => {
      await changeProperties(realm, user, [{ stream_id: params.stream_id, property: params.property, value: params.value }]);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/streams',
    params: {
      include_public: p.bool().default(true),
      include_web_public: p.bool().default(false),
      include_subscribed: p.bool().default(true),
      exclude_archived: p.bool().default(true),
      include_all_active: p.bool().default(false),
      include_all: p.bool().default(false),
      include_default: p.bool().default(false),
      include_owner_subscribed: p.bool().default(false),
      include_can_access_content: p.bool().default(false),
    },
    handler: async ({ realm, user, params }) => {
      const caller = callerFor(realm, user);
      const all = await fetchRealmStreams(db, realm.id, !params.exclude_archived);
      const subscribed = await fetchSubscribedStreamIdSet(db, user.id);
      const ownerSubscribed =
        params.include_owner_subscribed && user.is_bot && user.bot_owner_id !== null
          ? await fetchSubscribedStreamIdSet(db, user.bot_owner_id)
          : new Set<number>();
      const selected: Stream[] = [];
      for (const s of all) {
        const sub = subscribed.has(s.id);
        let take: boolean;
        if (params.include_all || params.include_all_active) {
          take = await caller.metadataAccess(s, sub);
        } else if (params.include_can_access_content) {
          take = ownerSubscribed.has(s.id) || (await caller.contentAccess(s, sub));
        } else {
          take =
            (params.include_subscribed && sub) ||
            (params.include_public && !isGuest(user) && !s.invite_only) ||
            (params.include_web_public && !!s.is_web_public && !s.invite_only && !s.deactivated) ||
            ownerSubscribed.has(s.id);
        }
        if (take) selected.push(s);
      }
      const ctx = await fetchStreamFormatContext(db, realm.id, selected);
      const defaults = params.include_default ? new Set(await fetchDefaultStreamIds(db, realm.id)) : null;
      const streams = selected.sort(byName).map((s) => {
        const dict = formatStream(s, ctx);
        if (defaults) dict.is_default = defaults.has(s.id);
        return dict;
      });
      return { streams };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/streams/:stream_id',
    params: { stream_id: p.int() },
    handler: async ({ realm, user, params }) => {
      const { stream } = await accessStreamById(callerFor(realm, user), params.stream_id, { requireActive: false, requireContentAccess: false });
      return { stream: formatStream(stream, await fetchStreamFormatContext(db, realm.id, [stream])) };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/streams/:stream_id/email_address',
    params: { stream_id: p.int(), sender_id: p.int().optional() },
    handler: async ({ realm, user, params }) => ({
      email: await doGetChannelEmailAddress(services, realm, user, params.stream_id, params.sender_id),
    }),
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/get_stream_id',
    params: { stream: p.str() },
    handler: async ({ realm, user, params }) => {
      const { stream } = await accessStreamByName(callerFor(realm, user), params.stream);
      return { stream_id: stream.id };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/streams/:stream_id/members',
    params: { stream_id: p.int() },
    handler: async ({ realm, user, params }) => {
      const { stream } = await accessStreamById(callerFor(realm, user), params.stream_id, { requireActive: false, requireContentAccess: false });
      return { subscribers: (await fetchSubscriberIdsByStream(db, [stream.id])).get(stream.id) ?? [] };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/streams/:stream_id',
    params: {
      stream_id: p.int(),
      description: p.str(descriptionSchema).optional(),
      new_name: p.str().optional(),
      is_private: p.bool().optional(),
      is_web_public: p.bool().optional(),
      history_public_to_subscribers: p.bool().optional(),
      is_default_stream: p.bool().optional(),
      message_retention_days: jsonOrRawParam(),
      is_archived: p.bool().optional(),
      folder_id: p.json(z.number().int()).nullable().optional(),
      topics_policy: topicsPolicyParam(),
      ...channelSettingUpdateParams(),
    },
    handler: async ({ realm, user, params }) => {
      const caller = callerFor(realm, user);
      const { stream, subscribed } = await accessStreamForAdministration(caller, params.stream_id);
      const settings = realmSettings(realm);

      // Checks, in Zulip's order (update_stream_backend); nothing changes until all pass.
      const isPrivate = params.is_private ?? !!stream.invite_only;
      const isWebPublic = params.is_web_public ?? !!stream.is_web_public;
      const isDefault = params.is_default_stream ?? (await fetchDefaultStreamIds(db, realm.id)).includes(stream.id);
      const historyPublic = params.history_public_to_subscribers ?? (params.is_private !== undefined ? !params.is_private : !!stream.history_public_to_subscribers);
      if (isWebPublic && !historyPublic) throw badRequest('Invalid parameters');
      if (isWebPublic && isPrivate) throw badRequest('Invalid parameters');
      if (!isPrivate && !historyPublic) throw badRequest('Invalid parameters');
      if (isPrivate && isDefault) throw badRequest('A default channel cannot be private.');
      if (!isPrivate && settings.moderation_request_channel_id === stream.id) throw badRequest('Moderation request channel must be private.');
      const contentAccess = () => caller.contentAccess(stream, subscribed);
      if (params.is_private !== undefined) {
        if (!(await contentAccess())) throw badRequest('Channel content access is required.');
        const rights = await channelCreationRights(caller);
        if (params.is_private ? !rights.private : !rights.public) throw insufficientPermission();
      }
      if (params.is_web_public) {
        if (!settings.enable_spectator_access) throw badRequest('Web-public channels are not enabled.');
        if (!(await channelCreationRights(caller)).webPublic) throw insufficientPermission();
      }
      if (params.is_default_stream !== undefined && !isAdmin(user)) throw adminRequired();
      let retention: number | null | undefined;
      if (params.message_retention_days !== undefined) {
        if (!isOwner(user)) throw ownerRequired();
        retention = parseMessageRetentionDays(params.message_retention_days);
      }
      const unarchive = params.is_archived === false;
      if (unarchive) {
        if (!stream.deactivated) throw badRequest('Channel is not currently deactivated');
        const subs = (await fetchSubscriberIdsByStream(db, [stream.id])).get(stream.id) ?? [];
        if (stream.invite_only && subs.length === 0) throw badRequest('Channel is private and have no subscribers');
      }
      if (params.topics_policy !== undefined) await checkTopicsPolicy(caller, params.topics_policy, stream);
      const newName = params.new_name !== undefined ? await checkStreamRename(caller, stream, params.new_name) : undefined;
      const folderId = params.folder_id === undefined || params.folder_id === null ? params.folder_id : (await accessChannelFolder(db, realm, params.folder_id)).id;
      const current = channelPermissions(stream);
      const requested = pickChannelSettings<GroupSettingUpdate>(params);
      const changed: Partial<Record<ChannelPermission, GroupSettingValue>> = {};
      for (const [name, update] of Object.entries(requested) as [ChannelPermission, GroupSettingUpdate][]) {
        if (!checkGroupSettingChange(current[name], update)) continue;
        if ((name === 'can_add_subscribers_group' || name === 'can_subscribe_group') && !(await contentAccess())) {
          throw badRequest('Channel content access is required.');
        }
        changed[name] = update.new;
      }
      const newValues = await checkChannelSettingValues(caller, changed);

      let s = stream;
      const privacyRequested = params.is_private !== undefined || params.is_web_public !== undefined || params.history_public_to_subscribers !== undefined;
      if (privacyRequested) {
        s = await doChangeStreamPermission(services, realm, user, s, { inviteOnly: isPrivate, historyPublicToSubscribers: historyPublic, isWebPublic });
      }
      if (params.is_default_stream !== undefined) {
        if (params.is_default_stream) await doAddDefaultStream(services, realm, s);
        else await doRemoveDefaultStream(services, realm, s);
      }
      if (retention !== undefined) s = await doSetStreamMessageRetentionDays(services, realm, user, s, retention);
      if (unarchive) {
        await doUnarchiveStream(services, realm, user, s);
        s = { ...s, deactivated: 0 };
      }
      if (params.topics_policy !== undefined) s = await doSetStreamTopicsPolicy(services, realm, user, s, params.topics_policy);
      if (params.description !== undefined) s = await doChangeStreamDescription(services, realm, user, s, cleanStreamDescription(params.description));
      if (newName !== undefined) s = await doRenameStream(services, realm, user, s, newName);
      if (folderId !== undefined) s = await doChangeStreamFolder(services, realm, user, s, folderId);
      for (const [name, value] of Object.entries(newValues) as [ChannelPermission, GroupSettingValue][]) {
        s = await doChangeStreamGroupSetting(services, realm, user, s, name, value);
      }
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/streams/:stream_id',
    params: { stream_id: p.int() },
    handler: async ({ realm, user, params }) => {
      const { stream } = await accessStreamForAdministration(callerFor(realm, user), params.stream_id);
      if (stream.deactivated) throw badRequest('Channel is already deactivated');
      await doArchiveStream(services, realm, user, stream);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/users/:user_id/subscriptions/:stream_id',
    params: { user_id: p.int(), stream_id: p.int() },
    handler: async ({ realm, user, params }) => {
      const target = await accessUserById(db, realm, user, params.user_id, { allowBots: true, forAdmin: false });
      const { stream } = await accessStreamById(callerFor(realm, user), params.stream_id, { requireContentAccess: false });
      return { is_subscribed: !!(await fetchSubscriptionRow(db, target.id, stream.id))?.active };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/users/:user_id/channels',
    params: { user_id: p.int() },
    handler: async ({ realm, user, params }) => {
      const caller = callerFor(realm, user);
      const target = await accessUserById(db, realm, user, params.user_id, { allowBots: true, forAdmin: false });
      const targetSubs = await fetchSubscribedStreamIdSet(db, target.id);
      const mine = target.id === user.id ? targetSubs : await fetchSubscribedStreamIdSet(db, user.id);
      const ids: number[] = [];
      for (const s of await fetchStreamsByIds(db, realm.id, [...targetSubs])) {
        if (await caller.metadataAccess(s, mine.has(s.id))) ids.push(s.id);
      }
      return { subscribed_channel_ids: ids.sort((a, b) => a - b) };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/default_streams',
    authorize: requireAdmin,
    params: { stream_id: p.int() },
    handler: async ({ realm, user, params }) => {
      const { stream } = await accessStreamById(callerFor(realm, user), params.stream_id);
      if (stream.invite_only) throw badRequest('Private channels cannot be made default.');
      await doAddDefaultStream(services, realm, stream);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/default_streams',
    authorize: requireAdmin,
    params: { stream_id: p.int() },
    handler: async ({ realm, user, params }) => {
      const { stream } = await accessStreamById(callerFor(realm, user), params.stream_id, { requireContentAccess: false });
      await doRemoveDefaultStream(services, realm, stream);
    },
  });
}
