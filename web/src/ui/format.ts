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

/** A Unicode emoji from its code (hex code points joined by `-`), as the server names it. */
export function emojiGlyph(code: string): string {
  try {
    return String.fromCodePoint(...code.split('-').map((h) => Number.parseInt(h, 16)));
  } catch {
    return '';
  }
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
