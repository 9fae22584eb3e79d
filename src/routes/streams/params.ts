import { z } from 'zod';
import { badRequest } from '../../errors.js';
import { CHANNEL_PERMISSIONS, type ChannelPermission } from '../../lib/access/streams.js';
import { groupSettingUpdateSchema, groupSettingValueSchema, type GroupSettingUpdate, type GroupSettingValue } from '../../lib/group_settings.js';
import { MAX_STREAM_DESCRIPTION_LENGTH } from '../../version.js';
import { TOPICS_POLICIES } from '../../actions/streams.js';
import { p, zInt, type Param } from '../params.js';

/** Parameter shapes shared by the channel endpoints. */

/** User IDs (preferred) or API emails, never mixed (zulip.yaml's Principals). */
export const principalsParam = (): Param<number[] | string[] | undefined> =>
  p.json<number[] | string[]>(z.union([z.array(zInt), z.array(z.string())])).optional();

/** "true", "false" or (since feature level 412) "partial"; we always answer with full lists. */
export const includeSubscribersParam = (): Param<boolean> =>
  p.custom((raw, name) => {
    const v = raw.trim().toLowerCase();
    if (v === 'true' || v === 'partial' || v === '"partial"') return true;
    if (v === 'false') return false;
    throw badRequest(`${name} is not a boolean`);
  }).default(false);

/** A value sent JSON-encoded by some clients and raw by others ("unlimited" / "\"unlimited\"" / 30). */
export const jsonOrRawParam = (): Param<string | number | undefined> =>
  p.custom<string | number>((raw) => {
    try {
      const v: unknown = JSON.parse(raw);
      if (typeof v === 'string' || typeof v === 'number') return v;
    } catch {
      return raw;
    }
    return raw;
  }).optional();

export const topicsPolicyParam = (): Param<string | undefined> =>
  p.custom((raw, name) => {
    let v = raw;
    try {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed === 'string') v = parsed;
    } catch {
      v = raw;
    }
    if (!(TOPICS_POLICIES as readonly string[]).includes(v)) throw badRequest(`Invalid ${name}`);
    return v;
  }).optional();

export const descriptionSchema = z.string().max(MAX_STREAM_DESCRIPTION_LENGTH);

/** One entry of POST /users/me/subscriptions' `subscriptions`; unknown keys are ignored, as in Zulip. */
export const subscriptionItemSchema = z.object({
  name: z.string(),
  description: descriptionSchema.optional(),
  color: z.string().optional(),
});

export const channelSettingValueParams = (): Record<ChannelPermission, Param<GroupSettingValue | undefined>> =>
  Object.fromEntries(CHANNEL_PERMISSIONS.map((n) => [n, p.json(groupSettingValueSchema).optional()])) as Record<
    ChannelPermission,
    Param<GroupSettingValue | undefined>
  >;

export const channelSettingUpdateParams = (): Record<ChannelPermission, Param<GroupSettingUpdate | undefined>> =>
  Object.fromEntries(CHANNEL_PERMISSIONS.map((n) => [n, p.json(groupSettingUpdateSchema).optional()])) as Record<
    ChannelPermission,
    Param<GroupSettingUpdate | undefined>
  >;

export function pickChannelSettings<T>(params: Record<string, unknown>): Partial<Record<ChannelPermission, T>> {
  const out: Partial<Record<ChannelPermission, T>> = {};
  for (const n of CHANNEL_PERMISSIONS) if (params[n] !== undefined) out[n] = params[n] as T;
  return out;
}

/** POST /users/me/subscriptions/properties: one requested change. */
export const subscriptionPropertyChangeSchema = z.object({
  stream_id: zInt,
  property: z.string(),
  value: z.union([z.boolean(), z.string()]),
});
