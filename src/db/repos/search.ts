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
 * m.search_tsvector (migration 0101), a cheap test per row. For a narrow that walks another
 * index (a topic, a conversation); `wordsDriver` gives the search's own walk.
 */
export function searchCondition(dialect: Dialect, q: SearchQuery): RawBuilder<SqlBool> {
  const parts: RawBuilder<SqlBool>[] = [];
  if (dialect === 'postgres') {
    parts.push(tsvectorMatch(q));
  } else {
    const match = fts5Query(q);
    parts.push(match === null ? sql<SqlBool>`1 = 0` : sql<SqlBool>`m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ${match})`);
  }
  parts.push(...phraseConditions(dialect, q));
  return sql<SqlBool>`(${sql.join(parts, sql` AND `)})`;
}

function tsvectorMatch(q: SearchQuery): RawBuilder<SqlBool> {
  return sql<SqlBool>`m.search_tsvector @@ plainto_tsquery('english'::regconfig, ${q.text})`;
}

/**
 * A search as the outer loop of a narrow query: its matches come newest first straight from
 * an index of each word's messages in ID order (bounded and ordered by `id`), so a common
 * word costs one lookup per message returned instead of a test of every message. `from`
 * goes first in the FROM clause; the caller joins `m` (and the reader's row) on `id`.
 */
export interface WordsDriver {
  from: RawBuilder<unknown>;
  id: RawBuilder<number>;
  condition: RawBuilder<SqlBool>;
}

/** PostgreSQL's lexemes of the search text, as plainto_tsquery finds them (sorted, unique). */
const lexemes = (text: string): RawBuilder<string[]> => sql<string[]>`tsvector_to_array(to_tsvector('english'::regconfig, ${text}))`;

/**
 * The lexemes, the sparsest among recent messages first: the one whose 20th newest message
 * is oldest, a word in fewer than 20 messages before any other, then the longest. Computed
 * in the query (no round trip first).
 */
function rankedLexemes(text: string): RawBuilder<string[]> {
  const twentiethNewest = sql`(SELECT c.message_id FROM message_search_words c WHERE c.word = l ORDER BY c.message_id DESC OFFSET 19 LIMIT 1)`;
  return sql<string[]>`(SELECT array_agg(l ORDER BY ${twentiethNewest} NULLS FIRST, length(l) DESC, l) FROM unnest(${lexemes(text)}) AS l)`;
}

/**
 * SQLite: the FTS5 table, newest first. PostgreSQL: message_search_words (migration 0105),
 * walking one word's messages backwards; with several words, the sparsest one's, each
 * checked first against the next one's list (two common words rarely together: one index
 * probe per message of the first, not a row fetch). The full test on search_tsvector checks
 * the rest. A search without words matches nothing: null on SQLite (the caller falls back
 * to `searchCondition`), and on PostgreSQL no word to walk.
 */
export function wordsDriver(dialect: Dialect, q: SearchQuery): WordsDriver | null {
  if (dialect === 'postgres') {
    const ranked = rankedLexemes(q.text);
    // The probe is a scalar subquery so that it stays an index probe per message: as a join or
    // EXISTS, whose size the planner cannot estimate, it hashed all of a common word's list.
    const walk =
      q.words.length > 1
        ? [
            sql<SqlBool>`sw.word = (SELECT r[1] FROM ${ranked} AS x(r))`,
            sql<SqlBool>`(SELECT sw2.message_id FROM message_search_words sw2 WHERE sw2.word = (SELECT coalesce(r[2], r[1]) FROM ${ranked} AS x(r)) AND sw2.message_id = sw.message_id) IS NOT NULL`,
          ]
        : // No subquery to plan: a third of the query's planning time.
          [sql<SqlBool>`sw.word = (${lexemes(q.text)})[1]`];
    // ts_match_vq is the function behind @@, which the planner estimates at a third of the
    // rows rather than at the word's frequency: with the word list's own estimate (migration
    // 0105) it then expects enough matches to stop walking at the limit, in the list's order.
    const match = sql<SqlBool>`ts_match_vq(m.search_tsvector, plainto_tsquery('english'::regconfig, ${q.text}))`;
    return {
      from: sql`message_search_words sw`,
      id: sql<number>`sw.message_id`,
      condition: sql<SqlBool>`(${sql.join([...walk, match, ...phraseConditions(dialect, q)], sql` AND `)})`,
    };
  }
  const match = fts5Query(q);
  if (match === null) return null;
  return {
    from: sql`messages_fts`,
    id: sql<number>`messages_fts.rowid`,
    condition: sql<SqlBool>`(${sql.join([sql<SqlBool>`messages_fts MATCH ${match}`, ...phraseConditions(dialect, q)], sql` AND `)})`,
  };
}
