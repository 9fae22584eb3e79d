// `<time:...>` parsing. Zulip hands the text to python-dateutil's parser and, failing that,
// reads it as a Unix timestamp. This covers the inputs people write: ISO 8601 (what the
// compose box's time picker inserts), "Jun 5th 2017, 10:30PM", "31 Dec 2017 5:30 am IST",
// numeric dates, and Unix timestamps. Missing date parts default to today, as in dateutil.

// Zulip's common_timezones: abbreviations dateutil accepts, as offsets in minutes.
const TZ_OFFSETS: Record<string, number> = {
  utc: 0, gmt: 0, z: 0, ut: 0, wet: 0, west: 60, bst: 60, ist: 330, cet: 60, cest: 120,
  met: 60, mest: 120, eet: 120, eest: 180, msk: 180, gst: 240, pkt: 300, npt: 345, bdt: 360,
  ict: 420, wib: 420, sgt: 480, hkt: 480, awst: 480, pht: 480, cst: 360, jst: 540, kst: 540,
  acst: 570, acdt: 630, aest: 600, aedt: 660, nzst: 720, nzdt: 780, hst: -600, akst: -540,
  akdt: -480, pst: -480, pdt: -420, mst: -420, mdt: -360, cdt: -300, est: -300, edt: -240,
  ast: -240, adt: -180, nst: -210, ndt: -150, brt: -180, art: -180, sast: 120, wat: 60,
  cat: 120, eat: 180,
};

const MONTHS = [
  ['jan', 'january'], ['feb', 'february'], ['mar', 'march'], ['apr', 'april'], ['may'],
  ['jun', 'june'], ['jul', 'july'], ['aug', 'august'], ['sep', 'sept', 'september'],
  ['oct', 'october'], ['nov', 'november'], ['dec', 'december'],
];
const MONTH_BY_NAME = new Map<string, number>(MONTHS.flatMap((names, i) => names.map((n) => [n, i + 1] as [string, number])));
const WEEKDAYS = new Set([
  'mon', 'monday', 'tue', 'tues', 'tuesday', 'wed', 'wednesday', 'thu', 'thur', 'thurs',
  'thursday', 'fri', 'friday', 'sat', 'saturday', 'sun', 'sunday',
]);
const JUMP_WORDS = new Set(['at', 'on', 'and', 'ad', 'm', 't', 'of', 'st', 'nd', 'rd', 'th']);

interface Fields {
  year?: number;
  month?: number;
  day?: number;
  hour?: number;
  minute?: number;
  second?: number;
  micro?: number;
  offsetMinutes?: number;
}

const MIN_EPOCH = -62135596800; // 0001-01-01T00:00:00Z
const MAX_EPOCH = 253402300799; // 9999-12-31T23:59:59Z

/** The `datetime` attribute for a `<time:...>` body (ISO 8601 in UTC, "Z"), or null if invalid. */
export function timestampToIso(input: string, now: Date = new Date()): string | null {
  const fields = parseDate(input.trim(), now);
  if (fields) return fields;
  if (!/^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i.test(input)) return null;
  const value = Number(input);
  if (!Number.isFinite(value) || value < MIN_EPOCH || value > MAX_EPOCH) return null;
  let seconds = Math.floor(value);
  let micro = Math.round((value - seconds) * 1e6);
  if (micro === 1e6) {
    seconds += 1;
    micro = 0;
  }
  return formatUtc(seconds, micro);
}

function formatUtc(epochSeconds: number, micro: number): string {
  const d = new Date(epochSeconds * 1000);
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  const base =
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}` +
    `T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  return micro ? `${base}.${pad(micro, 6)}Z` : `${base}Z`;
}

function daysInMonth(year: number, month: number): number {
  return [31, year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
}

function toIso(f: Fields, now: Date): string | null {
  const year = f.year ?? now.getUTCFullYear();
  const month = f.month ?? now.getUTCMonth() + 1;
  const day = f.day ?? now.getUTCDate();
  const hour = f.hour ?? 0;
  const minute = f.minute ?? 0;
  const second = f.second ?? 0;
  if (year < 1 || year > 9999 || month < 1 || month > 12) return null;
  if (day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, 0);
  const epoch = d.getTime() / 1000 - (f.offsetMinutes ?? 0) * 60;
  if (epoch < MIN_EPOCH || epoch > MAX_EPOCH) return null;
  return formatUtc(epoch, f.micro ?? 0);
}

const ISO_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,6})\d*)?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

function parseOffset(s: string): number | undefined {
  const m = /^([+-])(\d{1,2})(?::?(\d{2}))?$/.exec(s);
  if (!m) return undefined;
  const minutes = Number(m[2]) * 60 + Number(m[3] ?? 0);
  if (minutes > 24 * 60) return undefined;
  return m[1] === '-' ? -minutes : minutes;
}

function parseDate(s: string, now: Date): string | null {
  const iso = ISO_RE.exec(s);
  if (iso) {
    const f: Fields = {
      year: Number(iso[1]),
      month: Number(iso[2]),
      day: Number(iso[3]),
      hour: iso[4] === undefined ? undefined : Number(iso[4]),
      minute: iso[5] === undefined ? undefined : Number(iso[5]),
      second: iso[6] === undefined ? undefined : Number(iso[6]),
      micro: iso[7] === undefined ? undefined : Number(iso[7].padEnd(6, '0')),
    };
    if (iso[8]) {
      const off = iso[8].toUpperCase() === 'Z' ? 0 : parseOffset(iso[8]);
      if (off === undefined) return null;
      f.offsetMinutes = off;
    }
    return toIso(f, now);
  }
  if (/^\d+$/.test(s)) return parseDigits(s, now);
  return parseWords(s, now);
}

/** dateutil's reading of a bare digit string: YYYYMMDD[hhmm[ss]], YYMMDD, a day or a year. */
function parseDigits(s: string, now: Date): string | null {
  const n = (a: number, b: number): number => Number(s.slice(a, b));
  switch (s.length) {
    case 8:
      return toIso({ year: n(0, 4), month: n(4, 6), day: n(6, 8) }, now);
    case 12:
      return toIso({ year: n(0, 4), month: n(4, 6), day: n(6, 8), hour: n(8, 10), minute: n(10, 12) }, now);
    case 14:
      return toIso({ year: n(0, 4), month: n(4, 6), day: n(6, 8), hour: n(8, 10), minute: n(10, 12), second: n(12, 14) }, now);
    case 6:
      return toIso({ year: 2000 + n(0, 2), month: n(2, 4), day: n(4, 6) }, now);
    default:
      if (s.length <= 2) return toIso({ day: Number(s) }, now);
      if (s.length <= 4) return toIso({ year: Number(s) }, now);
      return null;
  }
}

function parseWords(s: string, now: Date): string | null {
  const tokens = s.match(/\d+(?:\.\d+)?|[A-Za-z]+|[^\sA-Za-z\d]/g) ?? [];
  const f: Fields = {};
  const numbers: string[] = [];
  let ampm: 'am' | 'pm' | undefined;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const lower = t.toLowerCase();
    if (/^\d/.test(t)) {
      if (tokens[i + 1] === ':' && /^\d+$/.test(tokens[i + 2] ?? '')) {
        if (f.hour !== undefined) return null;
        f.hour = Number(t);
        f.minute = Number(tokens[i + 2]);
        i += 2;
        if (tokens[i + 1] === ':' && /^\d+(\.\d+)?$/.test(tokens[i + 2] ?? '')) {
          const sec = tokens[i + 2]!;
          f.second = Math.floor(Number(sec));
          if (sec.includes('.')) f.micro = Number(sec.split('.')[1]!.slice(0, 6).padEnd(6, '0'));
          i += 2;
        }
      } else if (/^(am|pm|a|p)$/i.test(tokens[i + 1] ?? '') && f.hour === undefined && !t.includes('.')) {
        f.hour = Number(t);
        f.minute = 0;
      } else if (/^(st|nd|rd|th)$/i.test(tokens[i + 1] ?? '')) {
        if (f.day !== undefined) return null;
        f.day = Number(t);
        i += 1;
      } else if (!t.includes('.')) {
        numbers.push(t);
      } else {
        return null;
      }
    } else if (/^[A-Za-z]/.test(t)) {
      if (MONTH_BY_NAME.has(lower)) {
        if (f.month !== undefined) return null;
        f.month = MONTH_BY_NAME.get(lower);
      } else if (WEEKDAYS.has(lower) || JUMP_WORDS.has(lower)) {
        continue;
      } else if (lower === 'am' || lower === 'pm' || lower === 'a' || lower === 'p') {
        if (f.hour === undefined || ampm) return null;
        ampm = lower.startsWith('a') ? 'am' : 'pm';
        if (tokens[i + 1]?.toLowerCase() === 'm') i += 1;
      } else if (Object.hasOwn(TZ_OFFSETS, lower)) {
        if (f.offsetMinutes !== undefined) return null;
        f.offsetMinutes = TZ_OFFSETS[lower];
      } else {
        return null;
      }
    } else if ((t === '+' || t === '-') && f.hour !== undefined && /^\d+$/.test(tokens[i + 1] ?? '')) {
      let spec = t + tokens[i + 1]!;
      i += 1;
      if (tokens[i + 1] === ':' && /^\d{2}$/.test(tokens[i + 2] ?? '')) {
        spec += ':' + tokens[i + 2]!;
        i += 2;
      }
      const off = parseOffset(spec);
      if (off === undefined) return null;
      f.offsetMinutes = (f.offsetMinutes ?? 0) + off;
    } else if (!',./-;\''.includes(t)) {
      return null;
    }
  }
  if (ampm) {
    if (f.hour === undefined || f.hour > 12 || f.hour === 0) return null;
    if (ampm === 'pm' && f.hour < 12) f.hour += 12;
    if (ampm === 'am' && f.hour === 12) f.hour = 0;
  }
  if (!resolveNumbers(numbers, f)) return null;
  if (f.year === undefined && f.month === undefined && f.day === undefined && f.hour === undefined) return null;
  if (f.year !== undefined && f.year < 100 && numbers.some((n) => n.length <= 2)) f.year += 2000;
  return toIso(f, now);
}

/** Assign loose numbers to year/month/day the way dateutil's ymd resolution does (month first). */
function resolveNumbers(numbers: string[], f: Fields): boolean {
  const values = numbers.map(Number);
  const isYear = (i: number): boolean => numbers[i]!.length >= 3 || values[i]! > 31;
  if (values.length > 3) return false;
  if (f.month !== undefined) {
    for (let i = 0; i < values.length; i++) {
      if (f.day === undefined && !isYear(i)) f.day = values[i];
      else if (f.year === undefined) f.year = values[i];
      else return false;
    }
    return true;
  }
  if (values.length === 3) {
    if (isYear(0)) [f.year, f.month, f.day] = values as [number, number, number];
    else if (values[0]! > 12) [f.day, f.month, f.year] = values as [number, number, number];
    else [f.month, f.day, f.year] = values as [number, number, number];
    return true;
  }
  if (values.length === 2) {
    if (isYear(0)) [f.year, f.month] = values as [number, number];
    else if (isYear(1)) [f.month, f.year] = values as [number, number];
    else if (values[0]! > 12) [f.day, f.month] = values as [number, number];
    else [f.month, f.day] = values as [number, number];
    return true;
  }
  if (values.length === 1) {
    if (f.day !== undefined || isYear(0)) {
      if (f.year !== undefined) return false;
      f.year = values[0];
    } else {
      f.day = values[0];
    }
  }
  return true;
}
