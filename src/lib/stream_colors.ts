/**
 * Personal channel colors. Each new subscription gets a palette color the user does not yet
 * use (Zulip's pick_colors), so a user's channels stay distinguishable. Colors are stored and
 * sent as lowercase `#rrggbb`: zulip-flutter asserts that form and zulip-terminal refuses others.
 */
export const STREAM_ASSIGNMENT_COLORS: readonly string[] = [
  '#76ce90', '#fae589', '#a6c7e5', '#e79ab5', '#bfd56f', '#f4ae55',
  '#b0a5fd', '#addfe5', '#f5ce6e', '#c2726a', '#94c849', '#bd86e5',
  '#ee7e4a', '#a6dcbf', '#95a5fd', '#53a063', '#9987e1', '#e4523d',
  '#c2c2c2', '#4f8de4', '#c6a8ad', '#e7cc4d', '#c8bebf', '#a47462',
];

const HEX_COLOR = /^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;

/** `#rgb` or `#rrggbb` in any case, as `#rrggbb` lowercase; null when not a hex color. */
export function normalizeColor(value: string): string | null {
  const m = HEX_COLOR.exec(value);
  if (!m) return null;
  const hex = m[1]!.toLowerCase();
  return hex.length === 3 ? `#${[...hex].map((c) => c + c).join('')}` : `#${hex}`;
}

/**
 * Colors for new subscriptions of one user, by channel ID: a requested color when given,
 * otherwise the first palette colors the user does not already use, in channel ID order.
 */
export function pickColors(
  usedColors: Iterable<string>,
  requested: ReadonlyMap<number, string>,
  streamIds: readonly number[],
): Map<number, string> {
  const used = new Set(usedColors);
  const out = new Map<number, string>();
  const rest: number[] = [];
  for (const id of [...streamIds].sort((a, b) => a - b)) {
    const color = requested.get(id);
    if (color !== undefined) {
      out.set(id, color);
      used.add(color);
    } else {
      rest.push(id);
    }
  }
  const available = STREAM_ASSIGNMENT_COLORS.filter((c) => !used.has(c));
  rest.forEach((id, i) => {
    out.set(id, available[i] ?? STREAM_ASSIGNMENT_COLORS[id % STREAM_ASSIGNMENT_COLORS.length]!);
  });
  return out;
}
