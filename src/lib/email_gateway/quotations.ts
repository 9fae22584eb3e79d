/**
 * Removing the quoted message from a plain-text reply, as Zulip does with talon's
 * quotations.extract_from_plain: every line is marked (e empty, m quoted with ">", s a reply
 * header such as "On <date>, <someone> wrote:", f a forwarded-message line, t text), and the
 * quotation is found by regular expressions over the marks. Pure: no I/O.
 */

const SPLITTER_MAX_LINES = 6;
const MAX_LINES_COUNT = 1000;

const RE_FWD = /^[-]+[ ]*Forwarded message[ ]*[-]+\s*$/im;
const ON_DATE_SMB_WROTE_SOURCE =
  '(-*[>]?[ ]?(On|Le|W dniu|Op|Am|På|Den)[ ].*(,|użytkownik)(.*\\n){0,2}.*(wrote|sent|a écrit|napisał|schreef|verzond|geschreven|schrieb|skrev):?-*)';
const RE_ON_DATE_SMB_WROTE = new RegExp(ON_DATE_SMB_WROTE_SOURCE, 'g');
const RE_ON_DATE_WROTE_SMB = /(-*[>]?[ ]?(Op|Am)[ ].*(.*\n){0,2}.*(schreef|verzond|geschreven|schrieb)[ ]*.*:)/;
const RE_ORIGINAL_MESSAGE = /[\s]*[-]+[ ]*(Original Message|Reply Message|Ursprüngliche Nachricht|Antwort Nachricht|Oprindelig meddelelse)[ ]*[-]+/i;
const RE_FROM_COLON_OR_DATE_COLON =
  /((_+\r?\n)?[\s]*:?[*]?(From|Van|De|Von|Fra|Från|Date|[S]ent|Datum|Envoyé|Skickat|Sendt|Gesendet|Subject|Betreff|Objet|Emne|Ämne|To|An|Til|À|Till)[\s]?:([^\n$]+\n){1,2}){2,}/im;
const RE_ANDROID_WROTE = /[\s]*[-]+.*(wrote)[ ]*[-]+/i;
const RE_POLYMAIL = /On.*\s{2}<\smailto:.*\s> wrote:/i;

const SPLITTER_PATTERNS: RegExp[] = [
  RE_ORIGINAL_MESSAGE,
  new RegExp(ON_DATE_SMB_WROTE_SOURCE),
  RE_ON_DATE_WROTE_SMB,
  RE_FROM_COLON_OR_DATE_COLON,
  /(\d+\/\d+\/\d+|\d+\.\d+\.\d+).*\s\S+@\S+/s,
  /\S{3,10}, \d\d? \S{3,10} 20\d\d,? \d\d?:\d\d(:\d\d)?( \S+){3,6}@\S+:/,
  /Sent from Samsung.* \S+@\S+> wrote/,
  RE_ANDROID_WROTE,
  RE_POLYMAIL,
].map((re) => new RegExp(re.source, `${re.flags.replace('g', '')}y`));

const RE_LINK = /<(http:\/\/[^>]*)>/g;
const RE_NORMALIZED_LINK = /@@(http:\/\/[^>@]*)@@/g;
const RE_PARENTHESIS_LINK = /\(https?:\/\//;
const QUOT_PATTERN = /^>+ ?/;

const RE_QUOTATION = /((?:s|(?:me*){2,}).*me*)[te]*$/;
const RE_EMPTY_QUOTATION = /((?:(?:se*)+|(?:me*){2,}))e*/;

/** Python's re.match: a match starting at the beginning of `text`. */
function isSplitter(text: string): RegExpExecArray | null {
  for (const re of SPLITTER_PATTERNS) {
    re.lastIndex = 0;
    const m = re.exec(text);
    if (m) return m;
  }
  return null;
}

function markMessageLines(lines: string[]): string {
  const markers = lines.map(() => 'e');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line.trim()) markers[i] = 'e';
    else if (QUOT_PATTERN.test(line)) markers[i] = 'm';
    else if (RE_FWD.test(line)) markers[i] = 'f';
    else {
      const splitter = isSplitter(lines.slice(i, i + SPLITTER_MAX_LINES).join('\n'));
      if (splitter) {
        const count = splitter[0].replace(/(\r\n|\r|\n)$/, '').split(/\r\n|\r|\n/).length;
        for (let j = 0; j < count && i + j < lines.length; j++) markers[i + j] = 's';
        i += count - 1;
      } else {
        markers[i] = 't';
      }
    }
  }
  return markers.join('');
}

function processMarkedLines(lines: string[], marks: string): string[] {
  let markers = marks;
  // Without a reply header, a few quoted lines are part of the reply.
  if (!markers.includes('s') && !/(me*){3}/.test(markers)) markers = markers.replaceAll('m', 't');
  if (/^[te]*f/.test(markers)) return lines;
  // Text between quoted lines is an inline reply: keep everything.
  for (const inline of markers.matchAll(/(?<=m)e*(t[te]*)m/g)) {
    const start = inline.index;
    const links = RE_PARENTHESIS_LINK.test(lines[start - 1] ?? '') || new RegExp(`^${RE_PARENTHESIS_LINK.source}`).test((lines[start] ?? '').trim());
    if (!links) return lines;
  }
  const afterSplitter = /(se*)+((t|f)+e*)+/.exec(markers);
  if (afterSplitter) return lines.slice(0, afterSplitter.index);
  const quotation = RE_QUOTATION.exec(markers) ?? RE_EMPTY_QUOTATION.exec(markers);
  if (quotation) {
    const start = quotation.index + quotation[0].indexOf(quotation[1]!);
    return [...lines.slice(0, start), ...lines.slice(start + quotation[1]!.length)];
  }
  return lines;
}

/** talon's quotations.extract_from_plain. */
export function extractReplyFromPlain(body: string): string {
  const delimiter = /\r?\n/.exec(body)?.[0] ?? '\n';
  // '>' closing a link must not be taken for a quotation marker.
  let text = body.replace(RE_LINK, (match, link: string, offset: number) => {
    const lineStart = body.lastIndexOf('\n', offset - 1) + 1;
    return body[lineStart] === '>' ? match : `@@${link}@@`;
  });
  // "On <date>, <someone> wrote:" after text on the same line starts a line of its own.
  text = text.replace(RE_ON_DATE_SMB_WROTE, (match, ...rest: unknown[]) => {
    const offset = rest[rest.length - 2] as number;
    const whole = rest[rest.length - 1] as string;
    return offset && whole[offset - 1] !== '\n' ? `${delimiter}${match}` : match;
  });
  const lines = text.split(/\r\n|\r|\n/).slice(0, MAX_LINES_COUNT);
  const kept = processMarkedLines(lines, markMessageLines(lines));
  return kept.join(delimiter).replace(RE_NORMALIZED_LINK, '<$1>').trim();
}
