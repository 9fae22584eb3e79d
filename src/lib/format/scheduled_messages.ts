import type { ScheduledMessageRow } from '../../db/repos/scheduled_messages.js';

/** Zulip's ScheduledMessage.to_dict: `to` is the channel ID, or the DM's other participants. */
export function formatScheduledMessage(row: ScheduledMessageRow): Record<string, unknown> {
  const base = {
    scheduled_message_id: Number(row.id),
    to: row.type === 'stream' ? Number(row.stream_id) : (JSON.parse(row.to_user_ids) as number[]),
    type: row.type,
    content: row.content,
    rendered_content: row.rendered_content,
  };
  const tail = { scheduled_delivery_timestamp: Number(row.scheduled_timestamp), failed: !!row.failed };
  return row.type === 'stream' ? { ...base, topic: row.topic, ...tail } : { ...base, ...tail };
}

/** Zulip's ScheduledMessage.to_reminder_dict. */
export function formatReminder(row: ScheduledMessageRow): Record<string, unknown> {
  return {
    reminder_id: Number(row.id),
    to: JSON.parse(row.to_user_ids) as number[],
    type: 'private',
    content: row.content,
    rendered_content: row.rendered_content,
    scheduled_delivery_timestamp: Number(row.scheduled_timestamp),
    failed: !!row.failed,
    reminder_target_message_id: Number(row.reminder_target_message_id),
  };
}
