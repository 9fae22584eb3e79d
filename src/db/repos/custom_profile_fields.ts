import type { Tx } from '../index.js';
import type { CustomProfileField } from '../tables.js';
import { cachedRead } from '../cache.js';

export interface CustomProfileValueRow {
  user_id: number;
  field_id: number;
  value: string;
  rendered_value: string | null;
}

/** The realm's custom profile fields in display order: cached (db/cache.ts). */
export const fetchCustomProfileFields = cachedRead(
  'profile_fields',
  ['custom_profile_fields'],
  (realmId: number) => String(realmId),
  fetchCustomProfileFieldsUncached,
);

async function fetchCustomProfileFieldsUncached(db: Tx, realmId: number): Promise<CustomProfileField[]> {
  return db.selectFrom('custom_profile_fields').selectAll().where('realm_id', '=', realmId).orderBy('order').orderBy('id').execute();
}

export async function fetchCustomProfileField(db: Tx, realmId: number, fieldId: number): Promise<CustomProfileField | undefined> {
  return db.selectFrom('custom_profile_fields').selectAll().where('realm_id', '=', realmId).where('id', '=', fieldId).executeTakeFirst();
}

export async function customProfileFieldNameTaken(db: Tx, realmId: number, name: string, exceptId?: number): Promise<boolean> {
  let q = db.selectFrom('custom_profile_fields').select('id').where('realm_id', '=', realmId).where('name', '=', name);
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  return (await q.executeTakeFirst()) !== undefined;
}

export async function countFieldsInProfileSummary(db: Tx, realmId: number, exceptId?: number): Promise<number> {
  let q = db
    .selectFrom('custom_profile_fields')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('realm_id', '=', realmId)
    .where('display_in_profile_summary', '=', 1);
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

export async function insertCustomProfileField(
  db: Tx,
  row: {
    realm_id: number;
    name: string;
    hint: string;
    type: number;
    field_data: string;
    display_in_profile_summary: number;
    required: number;
    editable_by_user: number;
    use_for_user_matching: number;
  },
): Promise<CustomProfileField> {
  const field = await db.insertInto('custom_profile_fields').values(row).returningAll().executeTakeFirstOrThrow();
  // Zulip appends new fields at the end by giving them their own ID as order.
  await db.updateTable('custom_profile_fields').set({ order: field.id }).where('id', '=', field.id).execute();
  return { ...field, order: field.id };
}

export async function updateCustomProfileField(
  db: Tx,
  fieldId: number,
  changes: Partial<Pick<CustomProfileField, 'name' | 'hint' | 'field_data' | 'display_in_profile_summary' | 'required' | 'editable_by_user' | 'use_for_user_matching' | 'order'>>,
): Promise<void> {
  if (Object.keys(changes).length === 0) return;
  await db.updateTable('custom_profile_fields').set(changes).where('id', '=', fieldId).execute();
}

export async function deleteCustomProfileField(db: Tx, fieldId: number): Promise<void> {
  await db.deleteFrom('custom_profile_values').where('field_id', '=', fieldId).execute();
  await db.deleteFrom('custom_profile_fields').where('id', '=', fieldId).execute();
}

/** Every value set in the realm (or for the given users), for profile_data. */
/** Every user's profile values (cached, db/cache.ts), or only those of `userIds`. */
export async function fetchCustomProfileValues(db: Tx, realmId: number, userIds?: readonly number[]): Promise<CustomProfileValueRow[]> {
  return userIds ? fetchCustomProfileValuesOf(db, realmId, userIds) : fetchAllCustomProfileValues(db, realmId);
}

const fetchAllCustomProfileValues = cachedRead(
  'profile_values',
  ['custom_profile_values', 'custom_profile_fields'],
  (realmId: number) => String(realmId),
  (db: Tx, realmId: number) => fetchCustomProfileValuesOf(db, realmId, undefined),
);

async function fetchCustomProfileValuesOf(db: Tx, realmId: number, userIds: readonly number[] | undefined): Promise<CustomProfileValueRow[]> {
  if (userIds && userIds.length === 0) return [];
  let q = db
    .selectFrom('custom_profile_values')
    .innerJoin('custom_profile_fields', 'custom_profile_fields.id', 'custom_profile_values.field_id')
    .select(['custom_profile_values.user_id', 'custom_profile_values.field_id', 'custom_profile_values.value', 'custom_profile_values.rendered_value'])
    .where('custom_profile_fields.realm_id', '=', realmId);
  if (userIds) q = q.where('custom_profile_values.user_id', 'in', [...userIds]);
  return q.orderBy('custom_profile_values.user_id').orderBy('custom_profile_values.field_id').execute();
}

export async function fetchCustomProfileValue(db: Tx, userId: number, fieldId: number): Promise<CustomProfileValueRow | undefined> {
  return db.selectFrom('custom_profile_values').selectAll().where('user_id', '=', userId).where('field_id', '=', fieldId).executeTakeFirst();
}

export async function upsertCustomProfileValue(db: Tx, row: CustomProfileValueRow): Promise<void> {
  await db
    .insertInto('custom_profile_values')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'field_id']).doUpdateSet({ value: row.value, rendered_value: row.rendered_value }))
    .execute();
}

export async function deleteCustomProfileValue(db: Tx, userId: number, fieldId: number): Promise<void> {
  await db.deleteFrom('custom_profile_values').where('user_id', '=', userId).where('field_id', '=', fieldId).execute();
}

/** Removes the values that pick a dropdown option which no longer exists; returns the affected users. */
export async function deleteValuesNotIn(db: Tx, fieldId: number, allowed: readonly string[]): Promise<number[]> {
  let q = db.selectFrom('custom_profile_values').select('user_id').where('field_id', '=', fieldId);
  if (allowed.length) q = q.where('value', 'not in', [...allowed]);
  const rows = await q.execute();
  if (rows.length === 0) return [];
  let d = db.deleteFrom('custom_profile_values').where('field_id', '=', fieldId);
  if (allowed.length) d = d.where('value', 'not in', [...allowed]);
  await d.execute();
  return rows.map((r) => r.user_id);
}
