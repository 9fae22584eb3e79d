import { now, transaction } from '../db/index.js';
import type { User } from '../db/tables.js';
import {
  deleteSavedSnippetRow,
  fetchUserSavedSnippet,
  insertSavedSnippet,
  updateSavedSnippetRow,
  type SavedSnippetRow,
} from '../db/repos/saved_snippets.js';
import { JsonableError } from '../errors.js';
import { formatSavedSnippet } from '../lib/format/saved_snippets.js';
import type { ActionServices } from '../services.js';

/** Zulip answers a missing (or someone else's) snippet with 404 and code BAD_REQUEST. */
const snippetDoesNotExist = (): JsonableError => new JsonableError('Saved snippet does not exist.', 'BAD_REQUEST', 404);

export async function accessSavedSnippet(services: ActionServices, user: User, id: number): Promise<SavedSnippetRow> {
  const row = await fetchUserSavedSnippet(services.db.kysely, user.id, id);
  if (!row) throw snippetDoesNotExist();
  return row;
}

/** Preconditions: title and content are trimmed, non-empty and within Zulip's limits. */
export async function doCreateSavedSnippet(services: ActionServices, user: User, title: string, content: string): Promise<SavedSnippetRow> {
  return transaction(services.db, async (tx, afterCommit) => {
    const row = await insertSavedSnippet(tx, {
      realm_id: user.realm_id,
      user_id: user.id,
      title,
      content,
      date_created: now(),
    });
    afterCommit(() =>
      services.events.send(user.realm_id, { type: 'saved_snippets', op: 'add', saved_snippet: formatSavedSnippet(row) }, [user.id]),
    );
    return row;
  });
}

export async function doEditSavedSnippet(
  services: ActionServices,
  user: User,
  snippet: SavedSnippetRow,
  changes: { title?: string; content?: string },
): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    const row = await updateSavedSnippetRow(tx, snippet.id, changes);
    afterCommit(() =>
      services.events.send(user.realm_id, { type: 'saved_snippets', op: 'update', saved_snippet: formatSavedSnippet(row) }, [user.id]),
    );
  });
}

export async function doDeleteSavedSnippet(services: ActionServices, user: User, snippet: SavedSnippetRow): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deleteSavedSnippetRow(tx, snippet.id);
    afterCommit(() =>
      services.events.send(user.realm_id, { type: 'saved_snippets', op: 'remove', saved_snippet_id: snippet.id }, [user.id]),
    );
  });
}
