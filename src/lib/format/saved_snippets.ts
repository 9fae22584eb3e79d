import type { SavedSnippetRow } from '../../db/repos/saved_snippets.js';

export interface SavedSnippetDict {
  id: number;
  title: string;
  content: string;
  date_created: number;
}

export function formatSavedSnippet(row: SavedSnippetRow): SavedSnippetDict {
  return { id: row.id, title: row.title, content: row.content, date_created: row.date_created };
}
