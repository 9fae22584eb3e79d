import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../services.js';
import type { User } from '../../db/tables.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { userIdPathParam } from './params.js';
import { accessBotById, checkCreateBot, checkUpdateBot, doCreateBot, doUpdateBot, INTERFACE_GENERIC, requireMemberOrAdmin } from '../../actions/bots.js';
import { doDeactivateUser, doRegenerateApiKey } from '../../actions/users.js';
import { checkAvatarImage, doSetAvatar } from '../../actions/avatars.js';
import { filesOf } from '../../plugins/body.js';
import { badRequest } from '../../errors.js';
import { fetchStreamsByIds } from '../../db/repos/streams.js';
import { fetchActiveBotsOwnedBy, fetchUserById } from '../../db/repos/users.js';
import { isValidUrl } from '../../lib/custom_profile_fields.js';
import { avatarUrl } from '../../lib/avatar.js';
import { realmUrl } from '../../lib/urls.js';
import { ROLES, BOT_GENERIC } from '../../lib/roles.js';

const urlParam = (name: string) => p.json(z.string().refine(isValidUrl, { message: `${name} is not a URL` }));
const roleParam = p.int(z.number().int().refine((r) => (ROLES as readonly number[]).includes(r), { message: 'Invalid role' }));

/** Bots over the API (Zulip's add_bot_backend, get_bots_backend, patch_bot_backend and friends). */
export function registerBotRoutes(app: FastifyInstance, services: Services): void {
  const db = () => services.db.kysely;

  /** The optional avatar of POST and PATCH /bots: at most one image file. */
  function botAvatar(files: ReturnType<typeof filesOf>): { data: Buffer; contentType: string } | null {
    if (files.length > 1) throw badRequest('You may only upload one file at a time');
    return files.length ? checkAvatarImage(files[0]!) : null;
  }

  async function defaultStreamNames(bot: User): Promise<{ default_sending_stream: string | null; default_events_register_stream: string | null }> {
    const ids = [bot.default_sending_stream_id, bot.default_events_register_stream_id].filter((id): id is number => id !== null);
    const names = new Map((await fetchStreamsByIds(db(), bot.realm_id, ids)).map((s) => [s.id, s.name]));
    const name = (id: number | null) => (id === null ? null : (names.get(id) ?? null));
    return { default_sending_stream: name(bot.default_sending_stream_id), default_events_register_stream: name(bot.default_events_register_stream_id) };
  }

  endpoint(app, services, {
    method: 'POST',
    path: '/bots',
    authorize: requireMemberOrAdmin,
    params: {
      full_name: p.str(),
      short_name: p.str(),
      bot_type: p.int().default(BOT_GENERIC),
      payload_url: urlParam('payload_url').default(''),
      service_name: p.str().optional(),
      interface_type: p.int().default(INTERFACE_GENERIC),
      default_sending_stream: p.str().optional(),
      default_events_register_stream: p.str().optional(),
      default_all_public_streams: p.bool().optional(),
    },
    handler: async ({ realm, user, params, req }) => {
      const checked = await checkCreateBot(services, realm, user, {
        fullName: params.full_name,
        shortName: params.short_name,
        botType: params.bot_type,
        payloadUrl: params.payload_url,
        serviceName: params.service_name,
        interfaceType: params.interface_type,
        defaultSendingStream: params.default_sending_stream,
        defaultEventsRegisterStream: params.default_events_register_stream,
        defaultAllPublicStreams: params.default_all_public_streams,
      });
      const avatar = botAvatar(filesOf(req));
      let bot = await doCreateBot(services, realm, user, checked);
      if (avatar) {
        await doSetAvatar(services, realm, bot, avatar);
        bot = (await fetchUserById(db(), realm.id, bot.id))!;
      }
      return {
        user_id: bot.id,
        api_key: bot.api_key,
        avatar_url: avatarUrl(realmUrl(services.config, realm), bot),
        ...(await defaultStreamNames(bot)),
        default_all_public_streams: !!bot.default_all_public_streams,
      };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/bots',
    authorize: requireMemberOrAdmin,
    params: {},
    handler: async ({ realm, user }) => {
      const bots = await fetchActiveBotsOwnedBy(db(), realm.id, user.id);
      const out = [];
      for (const bot of bots) {
        out.push({
          username: bot.email,
          full_name: bot.full_name,
          api_key: bot.api_key,
          avatar_url: avatarUrl(realmUrl(services.config, realm), bot),
          ...(await defaultStreamNames(bot)),
          default_all_public_streams: !!bot.default_all_public_streams,
        });
      }
      return { bots: out };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/bots/:bot_id',
    authorize: requireMemberOrAdmin,
    params: {
      bot_id: userIdPathParam,
      full_name: p.str().optional(),
      role: roleParam.optional(),
      bot_owner_id: p.int().optional(),
      service_payload_url: urlParam('service_payload_url').optional(),
      service_interface: p.int().default(INTERFACE_GENERIC),
      default_sending_stream: p.str().optional(),
      default_events_register_stream: p.str().optional(),
      default_all_public_streams: p.bool().optional(),
    },
    handler: async ({ realm, user, params, req }) => {
      const bot = await accessBotById(db(), realm, user, params.bot_id);
      const avatar = botAvatar(filesOf(req));
      const update = await checkUpdateBot(services, realm, user, bot, {
        fullName: params.full_name,
        role: params.role,
        botOwnerId: params.bot_owner_id,
        serviceInterface: params.service_interface,
        servicePayloadUrl: params.service_payload_url,
        defaultSendingStream: params.default_sending_stream,
        defaultEventsRegisterStream: params.default_events_register_stream,
        defaultAllPublicStreams: params.default_all_public_streams,
      });
      let updated = await doUpdateBot(services, realm, bot, update, user);
      if (avatar) {
        await doSetAvatar(services, realm, updated, avatar);
        updated = (await fetchUserById(db(), realm.id, bot.id))!;
      }
      const owner = updated.bot_owner_id === null ? undefined : await fetchUserById(db(), realm.id, updated.bot_owner_id);
      return {
        full_name: updated.full_name,
        avatar_url: avatarUrl(realmUrl(services.config, realm), updated),
        service_interface: params.service_interface,
        service_payload_url: params.service_payload_url ?? null,
        config_data: null,
        ...(await defaultStreamNames(updated)),
        default_all_public_streams: !!updated.default_all_public_streams,
        ...(owner ? { bot_owner: owner.email } : {}),
      };
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/bots/:bot_id',
    authorize: requireMemberOrAdmin,
    params: { bot_id: userIdPathParam },
    handler: async ({ realm, user, params }) => {
      const bot = await accessBotById(db(), realm, user, params.bot_id);
      await doDeactivateUser(services, realm, bot, user);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/bots/:bot_id/api_key',
    authorize: requireMemberOrAdmin,
    params: { bot_id: userIdPathParam },
    handler: async ({ realm, user, params }) => ({ api_key: (await accessBotById(db(), realm, user, params.bot_id)).api_key }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/bots/:bot_id/api_key/regenerate',
    authorize: requireMemberOrAdmin,
    params: { bot_id: userIdPathParam },
    handler: async ({ realm, user, params }) => {
      const bot = await accessBotById(db(), realm, user, params.bot_id);
      return { api_key: await doRegenerateApiKey(services, realm, bot, user) };
    },
  });
}
