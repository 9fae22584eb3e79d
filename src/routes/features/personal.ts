import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../services.js';
import { cleanAlertWords, doAddAlertWords, doRemoveAlertWords } from '../../actions/alert_words.js';
import { checkMuteUser, checkUnmuteUser, doMuteUser, doUnmuteUser } from '../../actions/muted_users.js';
import { checkUpdateUserStatus, doUpdateUserStatus } from '../../actions/user_status.js';
import { fetchUserAlertWords } from '../../db/repos/alert_words.js';
import { fetchUserStatus } from '../../db/repos/user_status.js';
import { accessUserById } from '../../lib/access/users.js';
import { formatUserStatus } from '../../lib/format/user_status.js';
import { userSettings } from '../../lib/user_settings.js';
import { isAdmin } from '../../lib/roles.js';
import { insufficientPermission } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { requireHuman } from '../org/params.js';
import { p } from '../params.js';

/** Zulip's AlertWord.MAX_ALERT_WORD_LENGTH. */
const MAX_ALERT_WORD_LENGTH = 100;

/** Per-user endpoints: alert words, muted users, status. */
export function registerPersonalRoutes(app: FastifyInstance, services: Services): void {
  const alertWords = p.json(z.array(z.string().max(MAX_ALERT_WORD_LENGTH)));

  endpoint(app, services, {
    method: 'GET',
    path: '/users/me/alert_words',
    params: {},
    handler: async ({ user }) => ({ alert_words: await fetchUserAlertWords(services.db.kysely, user.id) }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/alert_words',
    params: { alert_words: alertWords },
    handler: async ({ params, realm, user }) => ({ alert_words: await doAddAlertWords(services, realm, user, cleanAlertWords(params.alert_words)) }),
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/users/me/alert_words',
    params: { alert_words: alertWords },
    handler: async ({ params, realm, user }) => ({ alert_words: await doRemoveAlertWords(services, realm, user, params.alert_words) }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/muted_users/:muted_user_id',
    params: { muted_user_id: p.int() },
    handler: async ({ params, realm, user }) => {
      const target = await checkMuteUser(services, realm, user, params.muted_user_id);
      await doMuteUser(services, realm, user, target);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/users/me/muted_users/:muted_user_id',
    params: { muted_user_id: p.int() },
    handler: async ({ params, realm, user }) => {
      const target = await checkUnmuteUser(services, realm, user, params.muted_user_id);
      await doUnmuteUser(services, realm, user, target);
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/status',
    authorize: requireHuman,
    params: {
      away: p.bool().optional(),
      status_text: p.str().optional(),
      emoji_name: p.str().optional(),
      emoji_code: p.str().optional(),
      reaction_type: p.str().optional(),
    },
    handler: async ({ params, realm, user }) => {
      const status = await checkUpdateUserStatus(services, realm, {
        away: params.away,
        statusText: params.status_text,
        emojiName: params.emoji_name,
        emojiCode: params.emoji_code,
        reactionType: params.reaction_type,
      });
      await doUpdateUserStatus(services, realm, user, status);
    },
  });

  // Administrators may set other users' statuses (feature level 407); `away` is not accepted here.
  endpoint(app, services, {
    method: 'POST',
    path: '/users/:user_id/status',
    authorize: (user) => {
      if (!isAdmin(user)) throw insufficientPermission();
    },
    params: {
      user_id: p.int(),
      status_text: p.str().optional(),
      emoji_name: p.str().optional(),
      emoji_code: p.str().optional(),
      reaction_type: p.str().optional(),
    },
    handler: async ({ params, realm, user }) => {
      const target = await accessUserById(services.db.kysely, realm, user, params.user_id, { allowBots: false, forAdmin: false });
      const status = await checkUpdateUserStatus(services, realm, {
        statusText: params.status_text,
        emojiName: params.emoji_name,
        emojiCode: params.emoji_code,
        reactionType: params.reaction_type,
      });
      await doUpdateUserStatus(services, realm, target, status);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/users/:user_id/status',
    params: { user_id: p.int() },
    handler: async ({ params, realm, user }) => {
      const db = services.db.kysely;
      const target = await accessUserById(db, realm, user, params.user_id, { allowBots: false, forAdmin: false });
      return { status: formatUserStatus(await fetchUserStatus(db, target.id), userSettings(target).presence_enabled) };
    },
  });
}
