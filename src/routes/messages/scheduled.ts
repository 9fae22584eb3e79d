import type { FastifyInstance } from 'fastify';
import { badRequest } from '../../errors.js';
import type { Services } from '../../services.js';
import {
  accessReminder,
  accessScheduledMessage,
  checkCreateReminder,
  checkDeliveryTimeInFuture,
  checkEditScheduledMessage,
  checkScheduleMessage,
  doCreateReminder,
  doDeleteScheduledMessage,
  doEditScheduledMessage,
  doScheduleMessage,
} from '../../actions/scheduled_messages.js';
import { REMIND, SEND_LATER, fetchUndeliveredScheduledMessages } from '../../db/repos/scheduled_messages.js';
import { formatReminder, formatScheduledMessage } from '../../lib/format/scheduled_messages.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';

/** Message.API_RECIPIENT_TYPES, with the modern names read as the legacy ones, as Zulip does. */
const RECIPIENT_TYPES: Record<string, 'stream' | 'private'> = { stream: 'stream', channel: 'stream', private: 'private', direct: 'private' };

function recipientType(raw: string): 'stream' | 'private' {
  const type = RECIPIENT_TYPES[raw];
  if (!type) throw badRequest('Invalid type');
  return type;
}

/** /scheduled_messages and /reminders (Zulip's views/scheduled_messages.py and views/reminders.py). */
export function registerScheduledMessageRoutes(app: FastifyInstance, services: Services): void {
  const db = services.db.kysely;

  endpoint(app, services, {
    method: 'GET',
    path: '/scheduled_messages',
    params: {},
    handler: async ({ user }) => ({
      scheduled_messages: (await fetchUndeliveredScheduledMessages(db, user.id, SEND_LATER)).map(formatScheduledMessage),
    }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/scheduled_messages',
    params: {
      type: p.str(),
      to: p.str(),
      content: p.str(),
      topic: p.str().optional().alias('subject'),
      scheduled_delivery_timestamp: p.int(),
      read_by_sender: p.bool().optional(),
    },
    handler: async ({ realm, user, params, client }) => {
      const type = recipientType(params.type);
      const prepared = await checkScheduleMessage(
        services,
        realm,
        user,
        { type, to: params.to, topic: params.topic, content: params.content, client },
        params.scheduled_delivery_timestamp,
        params.read_by_sender,
      );
      const row = await doScheduleMessage(services, prepared);
      return { scheduled_message_id: row.id };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/scheduled_messages/:scheduled_message_id',
    params: {
      scheduled_message_id: p.int(),
      type: p.str().optional(),
      to: p.str().optional(),
      content: p.str().optional(),
      topic: p.str().optional().alias('subject'),
      scheduled_delivery_timestamp: p.int().optional(),
    },
    handler: async ({ realm, user, params, client }) => {
      // Zulip's update_scheduled_message_backend checks, in its order.
      const { type: rawType, to, topic, content, scheduled_delivery_timestamp: deliverAt } = params;
      if (rawType === undefined && to === undefined && topic === undefined && content === undefined && deliverAt === undefined) {
        throw badRequest('Nothing to change');
      }
      const type = rawType === undefined ? undefined : recipientType(rawType);
      if (type !== undefined && to === undefined) throw badRequest('Recipient required when updating type of scheduled message.');
      if (type === 'stream' && topic === undefined) throw badRequest('Topic required when updating scheduled message type to stream.');
      if (deliverAt !== undefined) checkDeliveryTimeInFuture(deliverAt);
      const row = await accessScheduledMessage(services, user, params.scheduled_message_id);
      const changes = await checkEditScheduledMessage(services, realm, user, row, { type, to, topic, content, deliverAt, client });
      await doEditScheduledMessage(services, user, row, changes);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/scheduled_messages/:scheduled_message_id',
    params: { scheduled_message_id: p.int() },
    handler: async ({ user, params }) => {
      const row = await accessScheduledMessage(services, user, params.scheduled_message_id);
      await doDeleteScheduledMessage(services, user, row);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/reminders',
    params: {},
    handler: async ({ user }) => ({
      reminders: (await fetchUndeliveredScheduledMessages(db, user.id, REMIND)).map(formatReminder),
    }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/reminders',
    params: {
      message_id: p.int(),
      scheduled_delivery_timestamp: p.int(),
      note: p.str().optional(),
    },
    handler: async ({ realm, user, params, client }) => {
      const prepared = await checkCreateReminder(services, realm, user, params.message_id, params.scheduled_delivery_timestamp, params.note, client);
      const row = await doCreateReminder(services, prepared);
      return { reminder_id: row.id };
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/reminders/:reminder_id',
    params: { reminder_id: p.int() },
    handler: async ({ user, params }) => {
      const row = await accessReminder(services, user, params.reminder_id);
      await doDeleteScheduledMessage(services, user, row);
    },
  });
}
