import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Dialect } from '../index.js';
import { fts5Query, type SearchQuery } from '../../lib/narrow/search.js';

/** LIKE pattern for "contains `text`", with the wildcards in `text` escaped (ESCAPE '\'). */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The SQL condition "message `m` matches the search": every word (stemmed, stop words
 * ignored) in its topic or content, and each quoted phrase as is, case-insensitively.
 * SQLite answers from the FTS5 table messages_fts; PostgreSQL from the GIN index
 * messages_search, whose expression this must repeat exactly (migration 0040).
 */
export function searchCondition(dialect: Dialect, q: SearchQuery): RawBuilder<SqlBool> {
  const parts: RawBuilder<SqlBool>[] = [];
  if (dialect === 'postgres') {
    parts.push(sql<SqlBool>`to_tsvector('english'::regconfig, m.topic || ' ' || m.content) @@ plainto_tsquery('english'::regconfig, ${q.text})`);
  } else {
    const match = fts5Query(q);
    parts.push(match === null ? sql<SqlBool>`1 = 0` : sql<SqlBool>`m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ${match})`);
  }
  const like = dialect === 'postgres' ? sql.raw('ILIKE') : sql.raw('LIKE');
  for (const phrase of q.phrases) {
    const pattern = containsPattern(phrase);
    parts.push(sql<SqlBool>`(m.content ${like} ${pattern} ESCAPE '\\' OR m.topic ${like} ${pattern} ESCAPE '\\')`);
  }
  return sql<SqlBool>`(${sql.join(parts, sql` AND `)})`;
}
