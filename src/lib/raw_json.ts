import { randomBytes } from 'node:crypto';

/**
 * A value already serialized to JSON, placed in a response body as is. Large, rarely changing
 * parts of a response (register's realm_users: a thousand users, most of the body) are
 * serialized once and cached instead of on every request. Serialize bodies holding one with
 * stringifyJson.
 */
export class RawJson {
  constructor(readonly json: string) {}

  toJSON(): string {
    if (!collecting) throw new Error('RawJson must be serialized with stringifyJson');
    collecting.push(this.json);
    return `${MARK}${collecting.length - 1}`;
  }
}

// A marker no client string can contain by accident: NUL plus a secret per process.
const MARK = `\u0000${randomBytes(8).toString('hex')}:`;
// How the marker reads inside a JSON string literal ("\u0000..."), as a pattern.
const MARKED = new RegExp(`"${JSON.stringify(MARK).slice(1, -1).replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}(\\d+)"`, 'g');
let collecting: string[] | null = null;

/** JSON.stringify, with each RawJson inside replaced by its JSON text. */
export function stringifyJson(value: unknown): string {
  const outer = collecting;
  const raw: string[] = [];
  collecting = raw;
  try {
    const text = JSON.stringify(value);
    return raw.length === 0 ? text : text.replace(MARKED, (_, i: string) => raw[Number(i)]!);
  } finally {
    collecting = outer;
  }
}
