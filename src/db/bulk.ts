import { CompiledQuery, sql } from 'kysely';
import type { Tx } from './index.js';
import type { DB } from './tables.js';

/** SQL text of each multi-row INSERT shape: dialect, table, columns, row count, RETURNING. */
const texts = new Map<string, string>();

/**
 * One multi-row INSERT of `rows` (each value taken from `columns`, missing ones NULL). Kysely
 * takes about 2 µs per value to compile such a statement (100 µs for a message's 50 receipts,
 * every send), yet its text depends only on the shape: it is compiled once per shape and run
 * with the new values. With `returning` columns, the inserted rows come back with them (in no
 * guaranteed order).
 */
export async function insertRows<R = never>(
  db: Tx,
  table: keyof DB & string,
  columns: readonly string[],
  rows: readonly object[],
  returning: readonly string[] = [],
): Promise<R[]> {
  if (rows.length === 0) return [];
  const key = `${sql`${0}`.compile(db).sql}:${table}:${columns.join(',')}:${rows.length}:${returning.join(',')}`;
  let text = texts.get(key);
  if (text === undefined) {
    const values = rows.map(() => Object.fromEntries(columns.map((c) => [c, 0])));
    const insert = db.insertInto(table).values(values as never);
    text = (returning.length ? insert.returning(returning as never) : insert).compile().sql;
    if (texts.size >= 256) texts.delete(texts.keys().next().value as string);
    texts.set(key, text);
  }
  const params: unknown[] = new Array(rows.length * columns.length);
  let k = 0;
  for (const row of rows) {
    const r = row as Record<string, unknown>;
    for (const c of columns) params[k++] = r[c] ?? null;
  }
  const result = await db.executeQuery<R>(CompiledQuery.raw(text, params));
  return result.rows as R[];
}
