import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../services.js';
import type { User } from '../../db/tables.js';
import { adminRequired, badRequest } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { isAdmin } from '../../lib/roles.js';
import { formatCustomProfileField } from '../../lib/format/users.js';
import {
  checkCreateCustomProfileField,
  checkUpdateCustomProfileField,
  doCreateCustomProfileField,
  doDeleteCustomProfileField,
  doReorderCustomProfileFields,
  doUpdateCustomProfileField,
} from '../../actions/custom_profile_fields.js';
import { fetchCustomProfileField, fetchCustomProfileFields } from '../../db/repos/custom_profile_fields.js';

const requireAdmin = (user: User): void => {
  if (!isAdmin(user)) throw adminRequired();
};

const fieldDataParam = p.json(z.unknown());
const fieldNotFound = (id: number) => badRequest(`Field id ${id} not found.`);

/** GET/POST/PATCH /realm/profile_fields and PATCH/DELETE /realm/profile_fields/{field_id}. */
export function registerProfileFieldRoutes(app: FastifyInstance, services: Services): void {
  const db = () => services.db.kysely;

  endpoint(app, services, {
    method: 'GET',
    path: '/realm/profile_fields',
    params: {},
    handler: async ({ realm }) => ({ custom_fields: (await fetchCustomProfileFields(db(), realm.id)).map(formatCustomProfileField) }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/realm/profile_fields',
    authorize: requireAdmin,
    params: {
      name: p.str().default(''),
      hint: p.str().default(''),
      field_data: fieldDataParam.default({}),
      field_type: p.int(),
      display_in_profile_summary: p.bool().default(false),
      required: p.bool().default(false),
      editable_by_user: p.bool().default(true),
      use_for_user_matching: p.bool().default(false),
    },
    handler: async ({ realm, params }) => {
      const field = await checkCreateCustomProfileField(db(), realm, {
        name: params.name.trim(),
        hint: params.hint,
        type: params.field_type,
        fieldData: params.field_data,
        displayInProfileSummary: params.display_in_profile_summary,
        required: params.required,
        editableByUser: params.editable_by_user,
        useForUserMatching: params.use_for_user_matching,
      });
      return { id: (await doCreateCustomProfileField(services, realm, field)).id };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/realm/profile_fields',
    authorize: requireAdmin,
    params: { order: p.intList() },
    handler: async ({ realm, params }) => {
      const fields = await fetchCustomProfileFields(db(), realm.id);
      // Zulip's mapping: a repeated ID takes its last position; unknown IDs are ignored.
      const positions = new Map<number, number>();
      params.order.forEach((id, index) => positions.set(id, index));
      if (fields.some((f) => !positions.has(f.id))) throw badRequest('Invalid order mapping.');
      await doReorderCustomProfileFields(services, realm, new Map(fields.map((f) => [f.id, positions.get(f.id)!])));
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/realm/profile_fields/:field_id',
    authorize: requireAdmin,
    params: {
      field_id: p.int(),
      name: p.str().optional(),
      hint: p.str().optional(),
      field_data: fieldDataParam.optional(),
      required: p.bool().optional(),
      display_in_profile_summary: p.bool().optional(),
      editable_by_user: p.bool().optional(),
      use_for_user_matching: p.bool().optional(),
    },
    handler: async ({ realm, params }) => {
      const field = await fetchCustomProfileField(db(), realm.id, params.field_id);
      if (!field) throw fieldNotFound(params.field_id);
      const changes = await checkUpdateCustomProfileField(db(), realm, field, {
        name: params.name?.trim(),
        hint: params.hint,
        fieldData: params.field_data,
        required: params.required,
        displayInProfileSummary: params.display_in_profile_summary,
        editableByUser: params.editable_by_user,
        useForUserMatching: params.use_for_user_matching,
      });
      await doUpdateCustomProfileField(services, realm, field, changes);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/realm/profile_fields/:field_id',
    authorize: requireAdmin,
    params: { field_id: p.int() },
    handler: async ({ realm, params }) => {
      const field = await fetchCustomProfileField(db(), realm.id, params.field_id);
      if (!field) throw fieldNotFound(params.field_id);
      await doDeleteCustomProfileField(services, realm, field);
    },
  });
}
