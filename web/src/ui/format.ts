import type { Message } from '../api/types';
import type { State } from '../state/store';

const timeFormats = new Map<string, Intl.DateTimeFormat>();

function formatter(key: string, make: () => Intl.DateTimeFormat): Intl.DateTimeFormat {
  let f = timeFormats.get(key);
  if (!f) {
    f = make();
    timeFormats.set(key, f);
  }
  return f;
}

/** The time of day in the user's time zone and 12/24-hour preference. */
export function formatTime(ts: number, s: State): string {
  const { timezone, twenty_four_hour_time } = s.settings;
  const f = formatter(`t${timezone}${twenty_four_hour_time}`, () => {
    try {
      return new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', hour12: !twenty_four_hour_time, timeZone: timezone });
    } catch {
      return new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', hour12: !twenty_four_hour_time });
    }
  });
  return f.format(new Date(ts * 1000));
}

export function formatDate(ts: number, s: State): string {
  const { timezone } = s.settings;
  const f = formatter(`d${timezone}`, () => {
    try {
      return new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', year: 'numeric', timeZone: timezone });
    } catch {
      return new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', year: 'numeric' });
    }
  });
  return f.format(new Date(ts * 1000));
}

export function formatFull(ts: number, s: State): string {
  return `${formatDate(ts, s)}, ${formatTime(ts, s)}`;
}

/**
 * A Unicode emoji from its code (hex code points joined by `-`), as the server names it. A
 * lone code point that is text by default (❤, ☺) gets VS16 so it shows as the coloured emoji.
 */
export function emojiGlyph(code: string): string {
  try {
    const points = code.split('-').map((h) => Number.parseInt(h, 16));
    const glyph = String.fromCodePoint(...points);
    return points.length === 1 && !/\p{Emoji_Presentation}/u.test(glyph) ? `${glyph}\uFE0F` : glyph;
  } catch {
    return '';
  }
}

// The server's Unicode emoji: `<span aria-label="smile" class="emoji emoji-1f604" role="img" title="smile">:smile:</span>`
// (in search results the name inside may carry highlight spans).
const EMOJI_SPAN = /(<span\b[^>]*\bclass="emoji emoji-([0-9a-f]+(?:-[0-9a-f]+)*)"[^>]*>)(?:[^<]|<span class="highlight">[^<]*<\/span>)*(<\/span>)/g;

/**
 * Rendered message HTML with each Unicode emoji shown as its glyph instead of its `:name:`
 * text, keeping the span's title and aria-label (what screen readers say). The "Plain text"
 * emoji theme (`emojiset` "text") keeps the text, as Zulip shows it.
 */
export function withEmojiGlyphs(html: string, emojiset: string): string {
  if (emojiset === 'text' || !html.includes('class="emoji emoji-')) return html;
  return html.replace(EMOJI_SPAN, (all, open: string, code: string, close: string) => {
    const glyph = emojiGlyph(code);
    return glyph ? `${open}${glyph}${close}` : all;
  });
}

export function topicDisplay(topic: string, s: State): string {
  return topic === '' ? s.realm.empty_topic_display_name : topic;
}

/** "You and Othello, Iago" — the participants of a direct-message conversation other than me. */
export function dmNames(ids: number[], s: State): string {
  const others = ids.filter((id) => id !== s.me.user_id);
  if (others.length === 0) return s.me.full_name;
  return others.map((id) => s.users.get(id)?.full_name ?? `User ${id}`).join(', ');
}

export function recipientKey(m: Message): string {
  if (m.type === 'stream') return `s${m.stream_id}\u0000${m.subject.toLowerCase()}`;
  return `d${(m.display_recipient as { id: number }[]).map((r) => r.id).sort((a, b) => a - b).join(',')}`;
}

export function dmIdsOf(m: Message, s: State): number[] {
  return (m.display_recipient as { id: number }[]).map((r) => r.id).filter((id) => id !== s.me.user_id);
}
