import katex from 'katex';

/**
 * KaTeX rendering as Zulip's render_tex does it: null when KaTeX rejects the input (the caller
 * then shows a `tex-error` span). KaTeX escapes everything it emits, so its output is safe to
 * insert as raw HTML. Stack exhaustion on absurd nesting counts as a rejection too.
 */
export function renderTex(tex: string, displayMode: boolean): string | null {
  try {
    return katex.renderToString(tex, { displayMode, throwOnError: true, strict: 'ignore' }).trim();
  } catch {
    return null;
  }
}
