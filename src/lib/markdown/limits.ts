// Bounds that keep rendering time and stack depth proportional to the input, whatever its shape.
// Zulip (Python-Markdown) has no such bounds and relies on a 5-second timeout instead.

/**
 * Maximum nesting of block structure: fenced blocks inside fenced blocks, block quotes, and
 * lists. Deeper syntax is rendered as literal text, as Python-Markdown does for block quotes
 * near its recursion limit.
 */
export const MAX_BLOCK_NESTING = 24;

/**
 * Maximum nesting of inline elements built from one another (e.g. `*a *b* c*` is depth 2).
 * Deeper constructs stay literal text.
 */
export const MAX_INLINE_NESTING = 32;

/**
 * Inputs longer than this are not parsed as Markdown at all; they are rendered as escaped
 * paragraphs. Messages are limited to 10,000 characters and every other rendered text is
 * shorter, so this only guards against misuse. Within it, the worst inputs found (thousands
 * of formulas, emphasis or code spans in one paragraph) render in a fraction of a second.
 */
export const MAX_MARKDOWN_INPUT = 20_000;
