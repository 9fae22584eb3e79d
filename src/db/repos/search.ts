import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Dialect } from '../index.js';
import { fts5Query, type SearchQuery } from '../../lib/narrow/search.js';

/** LIKE pattern for "contains `text`", with the wildcards in `text` escaped (ESCAPE '\'). */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Each quoted phrase must appear as is, in the topic or the content, case-insensitively. */
function phraseConditions(dialect: Dialect, q: SearchQuery): RawBuilder<SqlBool>[] {
  const like = dialect === 'postgres' ? sql.raw('ILIKE') : sql.raw('LIKE');
  return q.phrases.map((phrase) => {
    const pattern = containsPattern(phrase);
    return sql<SqlBool>`(m.content ${like} ${pattern} ESCAPE '\\' OR m.topic ${like} ${pattern} ESCAPE '\\')`;
  });
}

/**
 * The SQL condition "message `m` matches the search": every word (stemmed, stop words
 * ignored) in its topic or content, and each quoted phrase as is, case-insensitively.
 * SQLite answers from the FTS5 table messages_fts; PostgreSQL from the stored column
 * m.search_tsvector (migration 0101), through its GIN index for rare words or as a cheap
 * test per row while walking an index newest first for common ones.
 */
export function searchCondition(dialect: Dialect, q: SearchQuery): RawBuilder<SqlBool> {
  const parts: RawBuilder<SqlBool>[] = [];
  if (dialect === 'postgres') {
    parts.push(sql<SqlBool>`m.search_tsvector @@ plainto_tsquery('english'::regconfig, ${q.text})`);
  } else {
    const match = fts5Query(q);
    parts.push(match === null ? sql<SqlBool>`1 = 0` : sql<SqlBool>`m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ${match})`);
  }
  parts.push(...phraseConditions(dialect, q));
  return sql<SqlBool>`(${sql.join(parts, sql` AND `)})`;
}

/**
 * SQLite, with the FTS5 table as the outer loop: its matches come newest first straight
 * from the index (bounded and ordered by `messages_fts.rowid`), so a common word costs one
 * lookup per message returned instead of materializing every match. The caller joins
 * `m` (and the reader's row) on messages_fts.rowid. Null when the search has no words.
 */
export function ftsDrivenCondition(q: SearchQuery): RawBuilder<SqlBool> | null {
  const match = fts5Query(q);
  if (match === null) return null;
  return sql<SqlBool>`(${sql.join([sql<SqlBool>`messages_fts MATCH ${match}`, sql<SqlBool>`m.id = messages_fts.rowid`, ...phraseConditions('sqlite', q)], sql` AND `)})`;
}
