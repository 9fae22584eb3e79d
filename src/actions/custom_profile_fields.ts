import { transaction, type Tx } from '../db/index.js';
import type { CustomProfileField, Realm } from '../db/tables.js';
import { badRequest } from '../errors.js';
import {
  countFieldsInProfileSummary,
  customProfileFieldNameTaken,
  deleteCustomProfileField,
  deleteValuesNotIn,
  fetchCustomProfileFields,
  insertCustomProfileField,
  updateCustomProfileField,
} from '../db/repos/custom_profile_fields.js';
import { fetchActiveUserIds, fetchUserById } from '../db/repos/users.js';
import {
  DEFAULT_EXTERNAL_ACCOUNTS,
  FIELD_DROPDOWN,
  FIELD_EXTERNAL_ACCOUNT,
  MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS,
  checkFieldDataShape,
  checkFieldDefinition,
  isDefaultExternalField,
  parseStoredFieldData,
  storedFieldData,
} from '../lib/custom_profile_fields.js';
import { formatCustomProfileField } from '../lib/format/users.js';
import { userIdsWhoCanAccess } from '../lib/access/users.js';
import type { ActionServices } from '../services.js';

type AfterCommit = (cb: () => void) => void;

/** Every active user gets the whole new list (Zulip's notify_realm_custom_profile_fields). */
async function notifyFields(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm): Promise<void> {
  const fields = (await fetchCustomProfileFields(tx, realm.id)).map(formatCustomProfileField);
  const users = await fetchActiveUserIds(tx, realm.id);
  afterCommit(() => services.events.send(realm.id, { type: 'custom_profile_fields', fields }, users));
}

export interface NewCustomProfileField {
  name: string;
  hint: string;
  type: number;
  fieldData: string;
  displayInProfileSummary: boolean;
  required: boolean;
  editableByUser: boolean;
  useForUserMatching: boolean;
}

/** Adds a field at the end of the order. Precondition: checked by checkFieldDefinition, label unused. */
export async function doCreateCustomProfileField(services: ActionServices, realm: Realm, f: NewCustomProfileField): Promise<CustomProfileField> {
  return transaction(services.db, async (tx, afterCommit) => {
    const field = await insertCustomProfileField(tx, {
      realm_id: realm.id,
      name: f.name,
      hint: f.hint,
      type: f.type,
      field_data: f.fieldData,
      display_in_profile_summary: f.displayInProfileSummary ? 1 : 0,
      required: f.required ? 1 : 0,
      editable_by_user: f.editableByUser ? 1 : 0,
      use_for_user_matching: f.useForUserMatching ? 1 : 0,
    });
    await notifyFields(tx, services, afterCommit, realm);
    return field;
  });
}

export type CustomProfileFieldChanges = Partial<
  Pick<CustomProfileField, 'name' | 'hint' | 'field_data' | 'display_in_profile_summary' | 'required' | 'editable_by_user' | 'use_for_user_matching'>
>;

/**
 * Updates a field's definition. Removing a dropdown option clears the values that chose it,
 * each announced as a cleared custom_profile_field of that user.
 */
export async function doUpdateCustomProfileField(services: ActionServices, realm: Realm, field: CustomProfileField, changes: CustomProfileFieldChanges): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    if (field.type === FIELD_DROPDOWN && changes.field_data !== undefined) {
      const options = Object.keys(JSON.parse(changes.field_data) as Record<string, unknown>);
      for (const userId of await deleteValuesNotIn(tx, field.id, options)) {
        const user = await fetchUserById(tx, realm.id, userId);
        if (!user) continue;
        const recipients = await userIdsWhoCanAccess(tx, realm, user);
        const event = { type: 'realm_user', op: 'update', person: { user_id: userId, custom_profile_field: { id: field.id, value: null } } };
        afterCommit(() => services.events.send(realm.id, event, recipients));
      }
    }
    await updateCustomProfileField(tx, field.id, changes);
    await notifyFields(tx, services, afterCommit, realm);
  });
}

/** Deletes a field and every value users stored in it. */
export async function doDeleteCustomProfileField(services: ActionServices, realm: Realm, field: CustomProfileField): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deleteCustomProfileField(tx, field.id);
    await notifyFields(tx, services, afterCommit, realm);
  });
}

/** Precondition: `order` maps every field of the realm, and only those, to its new position. */
export async function doReorderCustomProfileFields(services: ActionServices, realm: Realm, order: ReadonlyMap<number, number>): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    for (const [id, position] of order) await updateCustomProfileField(tx, id, { order: position });
    await notifyFields(tx, services, afterCommit, realm);
  });
}

// ---------------------------------------------------------------------------
// Checks (4xx) before the actions above, in Zulip's order.

export interface CustomProfileFieldInput {
  name: string;
  hint: string;
  type: number;
  fieldData: unknown;
  displayInProfileSummary: boolean;
  required: boolean;
  editableByUser: boolean;
  useForUserMatching: boolean;
}

const summaryLimitReached = () =>
  badRequest(`Only ${MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS} custom profile fields can be displayed in the profile summary.`);
const labelTaken = () => badRequest('A field with that label already exists.');

/** POST /realm/profile_fields: a default external account (e.g. GitHub) takes its label from the server. */
export async function checkCreateCustomProfileField(db: Tx, realm: Realm, input: CustomProfileFieldInput): Promise<NewCustomProfileField> {
  if (input.displayInProfileSummary && (await countFieldsInProfileSummary(db, realm.id)) >= MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS) {
    throw summaryLimitReached();
  }
  let fieldData = checkFieldDataShape(input.fieldData);
  checkFieldDefinition({ ...input, fieldData });
  let { name, hint } = input;
  if (isDefaultExternalField(input.type, fieldData)) {
    const subtype = fieldData.subtype as string;
    ({ name, hint } = DEFAULT_EXTERNAL_ACCOUNTS[subtype]!);
    fieldData = { subtype };
  }
  if (await customProfileFieldNameTaken(db, realm.id, name)) throw labelTaken();
  return {
    name,
    hint,
    type: input.type,
    fieldData: storedFieldData(input.type, fieldData),
    displayInProfileSummary: input.displayInProfileSummary,
    required: input.required,
    editableByUser: input.editableByUser,
    useForUserMatching: input.useForUserMatching,
  };
}

/** PATCH /realm/profile_fields/{id}: absent parameters keep their values. */
export async function checkUpdateCustomProfileField(
  db: Tx,
  realm: Realm,
  field: CustomProfileField,
  input: Partial<Omit<CustomProfileFieldInput, 'type'>>,
): Promise<CustomProfileFieldChanges> {
  if (input.displayInProfileSummary && (await countFieldsInProfileSummary(db, realm.id, field.id)) >= MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS) {
    throw summaryLimitReached();
  }
  const requestedData = input.fieldData === undefined ? undefined : checkFieldDataShape(input.fieldData);
  const currentData = parseStoredFieldData(field.field_data);
  if (isDefaultExternalField(field.type, currentData)) {
    // Only the display settings of a server-defined field may change.
    const changesDefinition =
      (input.name !== undefined && input.name !== field.name) ||
      (input.hint !== undefined && input.hint !== field.hint) ||
      (requestedData !== undefined && JSON.stringify(requestedData) !== JSON.stringify(currentData));
    if (changesDefinition) throw badRequest('Default custom field cannot be updated.');
  }
  const name = input.name ?? field.name;
  checkFieldDefinition({
    name,
    hint: input.hint ?? field.hint,
    type: field.type,
    fieldData: requestedData ?? currentData,
    displayInProfileSummary: input.displayInProfileSummary ?? !!field.display_in_profile_summary,
    useForUserMatching: input.useForUserMatching ?? !!field.use_for_user_matching,
  });
  if (input.name !== undefined && input.name !== field.name && (await customProfileFieldNameTaken(db, realm.id, input.name, field.id))) {
    throw labelTaken();
  }
  const changes: CustomProfileFieldChanges = {};
  if (input.name !== undefined) changes.name = input.name;
  if (input.hint !== undefined) changes.hint = input.hint;
  if (requestedData !== undefined && (field.type === FIELD_DROPDOWN || field.type === FIELD_EXTERNAL_ACCOUNT)) {
    changes.field_data = storedFieldData(field.type, requestedData);
  }
  if (input.required !== undefined) changes.required = input.required ? 1 : 0;
  if (input.displayInProfileSummary !== undefined) changes.display_in_profile_summary = input.displayInProfileSummary ? 1 : 0;
  if (input.editableByUser !== undefined) changes.editable_by_user = input.editableByUser ? 1 : 0;
  if (input.useForUserMatching !== undefined) changes.use_for_user_matching = input.useForUserMatching ? 1 : 0;
  return changes;
}
