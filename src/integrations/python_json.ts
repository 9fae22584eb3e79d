/**
 * Python's `json.dumps(value, indent=2)` (ensure_ascii, separators "," and ": "), which
 * Zulip's generic JSON integration prints; with `indent` null, `json.dumps(value)` (one line,
 * separators ", " and ": "), as Zulip stores a widget's submessage. JSON.parse keeps no distinction between 1 and
 * 1.0, so a float with an integral value prints as an integer here (Python prints `1.0`).
 */
export function pythonJsonDumps(value: unknown, indent: number | null = 2): string {
  return dump(value, indent, 0);
}

function quote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (c < 0x20 || c > 0x7e) {
      if (c > 0xffff) {
        const v = c - 0x10000;
        out += `\\u${(0xd800 | (v >> 10)).toString(16).padStart(4, '0')}\\u${(0xdc00 | (v & 0x3ff)).toString(16).padStart(4, '0')}`;
      } else {
        out += `\\u${c.toString(16).padStart(4, '0')}`;
      }
    } else out += ch;
  }
  return out + '"';
}

function number(n: number): string {
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : n < 0 ? '-Infinity' : 'NaN';
  return String(n);
}

function dump(value: unknown, indent: number | null, level: number): string {
  if (value === null || value === undefined) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'number') return number(value);
  if (typeof value === 'string') return quote(value);
  if (indent === null) {
    if (Array.isArray(value)) return '[' + value.map((v) => dump(v, null, 0)).join(', ') + ']';
    return '{' + Object.entries(value as Record<string, unknown>).map(([k, v]) => quote(k) + ': ' + dump(v, null, 0)).join(', ') + '}';
  }
  const inner = '\n' + ' '.repeat(indent * (level + 1));
  const outer = '\n' + ' '.repeat(indent * level);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return '[' + value.map((v) => inner + dump(v, indent, level + 1)).join(',') + outer + ']';
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return '{}';
  return '{' + entries.map(([k, v]) => inner + quote(k) + ': ' + dump(v, indent, level + 1)).join(',') + outer + '}';
}
