import { sql } from 'kysely';
import type { Database } from '../index.js';

/** One inconsistency between the database's records and its stored files. */
export interface IntegrityProblem {
  kind: 'attachment_file_missing' | 'attachment_size_mismatch' | 'stored_file_size_mismatch' | 'upload_without_attachment' | 'emoji_file_missing' | 'attachment_link_dangling' | 'database';
  detail: string;
}

/**
 * `parley check`: the records that name stored files against the files (stored_files,
 * docs/uploads.md), and on SQLite the database's own quick_check.
 */
export async function findIntegrityProblems(db: Database): Promise<{ problems: IntegrityProblem[]; counts: Record<string, number> }> {
  const k = db.kysely;
  const problems: IntegrityProblem[] = [];
  if (db.dialect === 'sqlite') {
    const rows = await sql<{ quick_check: string }>`PRAGMA quick_check`.execute(k);
    for (const r of rows.rows) if (r.quick_check !== 'ok') problems.push({ kind: 'database', detail: r.quick_check });
  }
  const missing = await sql<{ id: number; path_id: string }>`SELECT a.id, a.path_id FROM attachments a
    LEFT JOIN stored_files f ON f.path = 'uploads/' || a.path_id WHERE f.path IS NULL ORDER BY a.id`.execute(k);
  for (const r of missing.rows) problems.push({ kind: 'attachment_file_missing', detail: `attachment ${r.id}: no stored file for ${r.path_id}` });
  const sizes = await sql<{ id: number; path_id: string; size: number; stored: number }>`SELECT a.id, a.path_id, a.size, f.size AS stored FROM attachments a
    JOIN stored_files f ON f.path = 'uploads/' || a.path_id WHERE a.size <> f.size ORDER BY a.id`.execute(k);
  for (const r of sizes.rows) problems.push({ kind: 'attachment_size_mismatch', detail: `attachment ${r.id}: ${r.path_id} is recorded as ${r.size} bytes, the stored file has ${r.stored}` });
  const lengths = await sql<{ path: string; size: number; actual: number }>`SELECT path, size, length(data) AS actual FROM stored_files WHERE size <> length(data) ORDER BY path`.execute(k);
  for (const r of lengths.rows) problems.push({ kind: 'stored_file_size_mismatch', detail: `${r.path}: recorded as ${r.size} bytes, holds ${r.actual}` });
  const orphans = await sql<{ path: string }>`SELECT f.path FROM stored_files f
    LEFT JOIN attachments a ON f.path = 'uploads/' || a.path_id LEFT JOIN archived_attachments aa ON f.path = 'uploads/' || aa.path_id
    WHERE f.path LIKE 'uploads/%' AND a.id IS NULL AND aa.id IS NULL ORDER BY f.path`.execute(k);
  for (const r of orphans.rows) problems.push({ kind: 'upload_without_attachment', detail: `${r.path}: no attachment record` });
  const emoji = await sql<{ id: number; name: string; realm_id: number; file_name: string }>`SELECT e.id, e.name, e.realm_id, e.file_name FROM realm_emoji e
    LEFT JOIN stored_files f ON f.path = 'emoji/' || e.realm_id || '/' || e.file_name WHERE f.path IS NULL ORDER BY e.id`.execute(k);
  for (const r of emoji.rows) problems.push({ kind: 'emoji_file_missing', detail: `emoji ${r.id} (:${r.name}:): no stored file emoji/${r.realm_id}/${r.file_name}` });
  const dangling = await sql<{ attachment_id: number; message_id: number }>`SELECT am.attachment_id, am.message_id FROM attachment_messages am
    LEFT JOIN attachments a ON a.id = am.attachment_id LEFT JOIN messages m ON m.id = am.message_id
    WHERE a.id IS NULL OR m.id IS NULL ORDER BY am.message_id`.execute(k);
  for (const r of dangling.rows) problems.push({ kind: 'attachment_link_dangling', detail: `message ${r.message_id} links attachment ${r.attachment_id}, one of which does not exist` });
  const count = async (table: 'attachments' | 'stored_files' | 'messages' | 'realm_emoji'): Promise<number> =>
    Number((await k.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  return {
    problems,
    counts: { messages: await count('messages'), attachments: await count('attachments'), stored_files: await count('stored_files'), realm_emoji: await count('realm_emoji') },
  };
}
