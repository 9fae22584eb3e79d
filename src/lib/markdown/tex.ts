import type Katex from 'katex';
import { lazyRequire } from '../lazy.js';

/** KaTeX is loaded by the first message with math. */
const katex = lazyRequire<typeof Katex>('katex');

const silent = (): void => {};

/**
 * KaTeX rendering as Zulip's render_tex does it: null when KaTeX rejects the input (the caller
 * then shows a `tex-error` span). KaTeX escapes everything it emits, so its output is safe to
 * insert as raw HTML. Stack exhaustion on absurd nesting counts as a rejection too.
 */
export function renderTex(tex: string, displayMode: boolean): string | null {
  // KaTeX reports characters it has no metrics for (emoji, say) with console.warn; user
  // content must not be able to fill the server log that way.
  const warn = console.warn;
  console.warn = silent;
  try {
    return katex().renderToString(tex, { displayMode, throwOnError: true, strict: 'ignore' }).trim();
  } catch {
    return null;
  } finally {
    console.warn = warn;
  }
}
