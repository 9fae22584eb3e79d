import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';
import * as m0001 from './0001_initial.js';
import * as m0010 from './0010_users_profile_fields.js';
import * as m0060 from './0060_org_realm_domain_ids.js';
import * as m0090 from './0090_server_secrets.js';
import * as m0091 from './0091_system_bots.js';
import * as m0040 from './0040_messages_search.js';
import * as m0041 from './0041_messages_pending_receipts.js';
import * as m0050 from './0050_events_presence_sequence.js';
import * as m0100 from './0100_features_files.js';
import * as m0101 from './0101_messages_search_tsvector.js';
import * as m0102 from './0102_messages_deferred_search_index.js';
import * as m0103 from './0103_messages_dm_index_partial.js';
import * as m0104 from './0104_messages_realm_index_dropped.js';
import * as m0105 from './0105_messages_search_words.js';
import * as m0106 from './0106_user_messages_flag_statistics.js';
import * as m0107 from './0107_users_delivery_email_index.js';
import * as m0108 from './0108_users_full_name_index.js';
import * as m0109 from './0109_attachments_sessions_indexes.js';
import * as m0110 from './0110_scheduled_messages.js';
import * as m0111 from './0111_channel_folders.js';
import * as m0120 from './0120_bots.js';
import * as m0130 from './0130_client_devices.js';
import * as m0140 from './0140_realm_logos.js';
import * as m0150 from './0150_email_gateway.js';
import * as m0160 from './0160_auth_login_states.js';
import * as m0161 from './0161_two_factor.js';
import * as m0170 from './0170_realm_exports.js';
import * as m0180 from './0180_image_attachments.js';
import * as m0181 from './0181_bot_owner_reminders.js';
import * as m0190 from './0190_message_archive.js';
import * as m0191 from './0191_outgoing_webhook_queue.js';
import * as m0200 from './0200_notification_queue.js';
import * as m0210 from './0210_client_devices_push_key.js';
import * as m0211 from './0211_digest_emails.js';
import * as m0230 from './0230_scheduled_message_request_time.js';

export interface DialectMigration {
  up(db: Kysely<any>, dialect: Dialect): Promise<void>;
}

/**
 * Every migration, in order. Names are permanent: they are recorded in the database.
 * Add new ones at the end as NNNN_<area>_<what>.
 */
export const migrations: Record<string, DialectMigration> = {
  '0001_initial': m0001,
  '0010_users_profile_fields': m0010,
  '0060_org_realm_domain_ids': m0060,
  '0090_server_secrets': m0090,
  '0040_messages_search': m0040,
  '0091_system_bots': m0091,
  '0050_events_presence_sequence': m0050,
  '0100_features_files': m0100,
  '0041_messages_pending_receipts': m0041,
  '0101_messages_search_tsvector': m0101,
  '0102_messages_deferred_search_index': m0102,
  '0103_messages_dm_index_partial': m0103,
  '0104_messages_realm_index_dropped': m0104,
  '0105_messages_search_words': m0105,
  '0106_user_messages_flag_statistics': m0106,
  '0107_users_delivery_email_index': m0107,
  '0108_users_full_name_index': m0108,
  '0109_attachments_sessions_indexes': m0109,
  '0110_scheduled_messages': m0110,
  '0111_channel_folders': m0111,
  '0120_bots': m0120,
  '0130_client_devices': m0130,
  '0140_realm_logos': m0140,
  '0150_email_gateway': m0150,
  '0160_auth_login_states': m0160,
  '0161_two_factor': m0161,
  '0170_realm_exports': m0170,
  '0180_image_attachments': m0180,
  '0181_bot_owner_reminders': m0181,
  '0190_message_archive': m0190,
  '0191_outgoing_webhook_queue': m0191,
  '0200_notification_queue': m0200,
  '0210_client_devices_push_key': m0210,
  '0211_digest_emails': m0211,
  '0230_scheduled_message_request_time': m0230,
};
