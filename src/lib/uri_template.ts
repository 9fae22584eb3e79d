/**
 * RFC 6570 URI Template syntax (levels 1-4), for code playgrounds and linkifiers.
 * Pure: parsing only, no expansion.
 */

export interface ParsedUriTemplate {
  /** Variable names in order of first appearance, without duplicates. */
  variables: string[];
}

const OPERATORS = new Set(['+', '#', '.', '/', ';', '?', '&']);
/** Operators RFC 6570 section 2.2 reserves for future extensions: invalid in a template. */
const RESERVED_OPERATORS = new Set(['=', ',', '!', '@', '|']);
// varname = varchar *( ["."] varchar ); varchar = ALPHA / DIGIT / "_" / pct-encoded
const VARNAME = /^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*$/;
// prefix modifier: ":" max-length, 1-9999 without a leading zero
const PREFIX = /^[1-9][0-9]{0,3}$/;

function isLiteralChar(c: string): boolean {
  const code = c.codePointAt(0)!;
  // CTL, SP, DQUOTE, "'", "%", "<", ">", "\", "^", "`", "{", "|", "}" are excluded (section 2.1).
  if (code <= 0x20 || code === 0x7f) return false;
  return !`"'%<>\\^\`{|}`.includes(c);
}

function parseVarspec(spec: string): string | null {
  let name = spec;
  if (name.endsWith('*')) {
    name = name.slice(0, -1);
  } else {
    const colon = name.indexOf(':');
    if (colon !== -1) {
      if (!PREFIX.test(name.slice(colon + 1))) return null;
      name = name.slice(0, colon);
    }
  }
  return VARNAME.test(name) ? name : null;
}

/** Parses a URI template; null when it is not valid RFC 6570 syntax. */
export function parseUriTemplate(template: string): ParsedUriTemplate | null {
  const variables: string[] = [];
  let i = 0;
  while (i < template.length) {
    const c = template[i]!;
    if (c === '{') {
      const end = template.indexOf('}', i + 1);
      if (end === -1) return null;
      let body = template.slice(i + 1, end);
      if (body.includes('{')) return null;
      const op = body[0];
      if (op !== undefined && RESERVED_OPERATORS.has(op)) return null;
      if (op !== undefined && OPERATORS.has(op)) body = body.slice(1);
      if (body === '') return null;
      for (const spec of body.split(',')) {
        const name = parseVarspec(spec);
        if (name === null) return null;
        if (!variables.includes(name)) variables.push(name);
      }
      i = end + 1;
    } else if (c === '%') {
      if (!/^%[0-9A-Fa-f]{2}/.test(template.slice(i, i + 3))) return null;
      i += 3;
    } else {
      const cp = template.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      if (!isLiteralChar(ch)) return null;
      i += ch.length;
    }
  }
  return { variables };
}
