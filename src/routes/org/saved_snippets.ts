import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { fetchUserSavedSnippets } from '../../db/repos/saved_snippets.js';
import { formatSavedSnippet } from '../../lib/format/saved_snippets.js';
import { MAX_MESSAGE_LENGTH } from '../../version.js';
import {
  accessSavedSnippet,
  doCreateSavedSnippet,
  doDeleteSavedSnippet,
  doEditSavedSnippet,
} from '../../actions/saved_snippets.js';
import { strippedString } from './params.js';

/** Zulip's SavedSnippet.MAX_TITLE_LENGTH. */
export const MAX_SAVED_SNIPPET_TITLE_LENGTH = 60;

export function registerSavedSnippetRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'GET',
    path: '/saved_snippets',
    params: {},
    handler: async ({ user }) => {
      const rows = await fetchUserSavedSnippets(services.db.kysely, user.id);
      return { saved_snippets: rows.map(formatSavedSnippet) };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/saved_snippets',
    params: {
      title: strippedString(MAX_SAVED_SNIPPET_TITLE_LENGTH),
      content: strippedString(MAX_MESSAGE_LENGTH),
    },
    handler: async ({ user, params }) => {
      const row = await doCreateSavedSnippet(services, user, params.title, params.content);
      return { saved_snippet_id: row.id };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/saved_snippets/:saved_snippet_id',
    params: {
      saved_snippet_id: p.int(),
      title: strippedString(MAX_SAVED_SNIPPET_TITLE_LENGTH).optional(),
      content: strippedString(MAX_MESSAGE_LENGTH).optional(),
    },
    handler: async ({ user, params }) => {
      // A missing or foreign snippet is a 404 whatever the parameters; with nothing to
      // change an existing one succeeds without a spurious event, as Zulip does.
      const snippet = await accessSavedSnippet(services, user, params.saved_snippet_id);
      if (params.title === undefined && params.content === undefined) return;
      const changes: { title?: string; content?: string } = {};
      if (params.title !== undefined) changes.title = params.title;
      if (params.content !== undefined) changes.content = params.content;
      await doEditSavedSnippet(services, user, snippet, changes);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/saved_snippets/:saved_snippet_id',
    params: { saved_snippet_id: p.int() },
    handler: async ({ user, params }) => {
      const snippet = await accessSavedSnippet(services, user, params.saved_snippet_id);
      await doDeleteSavedSnippet(services, user, snippet);
    },
  });
}
