import { JsonableError } from '../errors.js';

/** orjson's nesting limit, beyond which Zulip answers "Malformed JSON". */
const MAX_DEPTH = 1024;

function tooDeep(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_DEPTH) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** A webhook body parsed as Zulip parses it: "Malformed JSON" (INVALID_JSON) for invalid or too deeply nested text. */
export function parseWebhookJson(text: string): unknown {
  const malformed = (): JsonableError => new JsonableError('Malformed JSON', 'INVALID_JSON', 400);
  if (tooDeep(text)) throw malformed();
  try {
    return JSON.parse(text);
  } catch {
    throw malformed();
  }
}
