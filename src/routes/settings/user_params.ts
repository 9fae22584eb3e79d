import { badRequest } from '../../errors.js';
import {
  AVAILABLE_NOTIFICATION_SOUNDS,
  LANGUAGES,
  USER_SETTING_DEFAULTS,
  userSettingsSchema,
  type StoredUserSettings,
  type UserSettingName,
} from '../../lib/user_settings.js';
import { p, type Param } from '../params.js';

/**
 * Parameters for personal settings, derived from the settings table: booleans and integers
 * arrive JSON-encoded, strings raw, as in Zulip's json_change_settings.
 */
export function userSettingParams(names: readonly UserSettingName[]): Record<string, Param<unknown>> {
  const out: Record<string, Param<unknown>> = {};
  for (const name of names) {
    const sample = USER_SETTING_DEFAULTS[name];
    if (typeof sample === 'boolean') out[name] = p.bool().optional();
    else if (typeof sample === 'number') out[name] = p.int().optional();
    else out[name] = p.str().optional();
  }
  return out;
}

const MAX_EMAIL_BATCHING_PERIOD_SECONDS = 7 * 24 * 60 * 60;

/**
 * Validates the given settings with Zulip's messages (check_settings_values and the
 * check_int_in / check_string_in validators) and returns them typed.
 */
export function checkUserSettingValues(raw: Record<string, unknown>, names: readonly UserSettingName[]): Partial<StoredUserSettings> {
  const out: Record<string, unknown> = {};
  for (const name of names) {
    let value = raw[name];
    if (value === undefined) continue;
    if (name === 'notification_sound') {
      if (value !== 'none' && !(AVAILABLE_NOTIFICATION_SOUNDS as readonly unknown[]).includes(value)) {
        throw badRequest(`Invalid notification sound '${String(value)}'`);
      }
    } else if (name === 'email_notifications_batching_period_seconds') {
      const v = value as number;
      if (v <= 0 || v > MAX_EMAIL_BATCHING_PERIOD_SECONDS) throw badRequest(`Invalid email batching period: ${v} seconds`);
    } else if (name === 'default_language') {
      if (!(String(value) in LANGUAGES)) throw badRequest('Invalid default_language');
    } else if (name === 'web_home_view' && value === 'recent_topics') {
      // Renamed to "recent" at feature level 459; older clients still send the old name.
      value = 'recent';
    } else if (!userSettingsSchema.shape[name].safeParse(value).success) {
      throw badRequest(`Invalid ${name}`);
    }
    out[name] = value;
  }
  return out as Partial<StoredUserSettings>;
}
