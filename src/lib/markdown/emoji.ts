import { createRequire } from 'node:module';

// Unicode emoji names as Zulip uses them: `emoji_code` is the lowercase hex codepoint sequence
// without U+FE0F; names are lowercase with underscores.
//
// The base data is iamcal's emoji-datasource 15.0.1 (the release Zulip's emoji set is built
// from, so Unicode 15.1 emoji stay unrecognized as in Zulip). Zulip curates its own names on
// top of it; ZULIP_NAMES below reproduces the renames for the most used emoji (and every one
// the shared rendering cases use). Every other emoji keeps the datasource short names, with
// "-" turned into "_". Skin-tone modifiers, hair components and ZWJ family sequences are left
// out, as in Zulip.

interface DatasourceEmoji {
  name: string | null;
  unified: string;
  short_name: string;
  short_names: string[];
  category: string;
  subcategory: string;
  has_img_google: boolean;
}

/** code -> [canonical name, ...aliases] for the emoji whose Zulip names differ from the datasource. */
const ZULIP_NAMES: Record<string, readonly string[]> = {
  '1f600': ['grinning', 'happy'],
  '1f603': ['smiley'],
  '1f604': ['big_smile'],
  '1f601': ['grinning_face_with_smiling_eyes'],
  '1f606': ['laughing', 'lol'],
  '1f605': ['sweat_smile'],
  '1f602': ['joy', 'tears', 'laughter_tears'],
  '1f923': ['rolling_on_the_floor_laughing', 'rofl'],
  '263a': ['smiling_face', 'relaxed'],
  '1f60a': ['blush'],
  '1f607': ['innocent', 'halo'],
  '1f642': ['smile'],
  '1f643': ['upside_down', 'oops'],
  '1f609': ['wink'],
  '1f60c': ['relieved'],
  '1f60d': ['heart_eyes', 'in_love'],
  '1f618': ['heart_kiss', 'blow_a_kiss'],
  '1f60b': ['yum'],
  '1f61b': ['stuck_out_tongue', 'mischievous'],
  '1f61c': ['stuck_out_tongue_wink', 'joking', 'crazy'],
  '1f61d': ['stuck_out_tongue_closed_eyes'],
  '1f911': ['money_face', 'kaching'],
  '1f917': ['hug', 'arms_open'],
  '1f913': ['nerd', 'geek'],
  '1f60e': ['sunglasses'],
  '1f921': ['clown'],
  '1f920': ['cowboy'],
  '1f60f': ['smirk', 'smug'],
  '1f612': ['unamused'],
  '1f61e': ['disappointed'],
  '1f614': ['pensive', 'tired'],
  '1f61f': ['worried'],
  '1f615': ['oh_no', 'half_frown', 'concerned', 'confused'],
  '1f641': ['frown', 'slight_frown'],
  '2639': ['sad', 'big_frown'],
  '1f623': ['persevere', 'helpless'],
  '1f616': ['confounded', 'agony'],
  '1f629': ['weary', 'distraught'],
  '1f624': ['triumph'],
  '1f620': ['angry'],
  '1f621': ['rage'],
  '1f636': ['speechless', 'no_mouth', 'blank', 'poker_face'],
  '1f610': ['neutral'],
  '1f611': ['expressionless'],
  '1f62f': ['hushed'],
  '1f626': ['frowning'],
  '1f627': ['anguished', 'pained'],
  '1f62e': ['open_mouth', 'surprise'],
  '1f632': ['astonished'],
  '1f633': ['flushed', 'embarrassed', 'blushing'],
  '1f631': ['scream'],
  '1f628': ['fear', 'scared', 'shock'],
  '1f630': ['cold_sweat'],
  '1f622': ['cry'],
  '1f625': ['exhausted', 'disappointed_relieved', 'stressed'],
  '1f924': ['drooling'],
  '1f62d': ['sob'],
  '1f613': ['sweat'],
  '1f62a': ['sleepy'],
  '1f634': ['sleeping'],
  '1f644': ['rolling_eyes'],
  '1f914': ['thinking'],
  '1f925': ['lying'],
  '1f62c': ['grimacing', 'nervous', 'anxious'],
  '1f910': ['silence', 'quiet', 'hush', 'zip_it', 'lips_are_sealed'],
  '1f922': ['nauseated', 'queasy'],
  '1f927': ['sneezing'],
  '1f637': ['cant_talk', 'mask'],
  '1f912': ['sick', 'flu', 'face_with_thermometer', 'ill', 'fever'],
  '1f915': ['hurt', 'head_bandage', 'injured'],
  '1f608': ['smiling_devil'],
  '1f47f': ['devil', 'angry_devil'],
  '1f4a9': ['poop', 'pile_of_poo'],
  '1f47b': ['ghost', 'boo', 'spooky', 'haunted'],
  '1f47d': ['alien', 'ufo'],
  '1f916': ['robot'],
  '1f44d': ['+1', 'thumbs_up', 'like'],
  '1f44e': ['-1', 'thumbs_down'],
  '1f44f': ['clap', 'applause'],
  '1f64f': ['pray', 'welcome', 'thank_you', 'namaste'],
  '2764': ['heart', 'love', 'love_you'],
  '1f525': ['fire', 'lit', 'hot', 'flame'],
  '1f4af': ['100', 'hundred'],
  '1f440': ['eyes', 'looking'],
  '1f44b': ['wave', 'hello', 'hi'],
  '2705': ['check', 'all_good', 'approved'],
  '1f6e0': ['working_on_it', 'hammer_and_wrench', 'tools'],
  '2b06': ['up', 'north'],
  '2b07': ['down', 'south'],
  '27a1': ['right', 'east'],
  '2b05': ['left', 'west'],
  '1f384': ['holiday_tree'],
  '1f947': ['gold', 'number_one'],
  '1f948': ['silver'],
  '1f949': ['bronze'],
  '2797': ['division', 'divide'],
  '2795': ['plus', 'add'],
  '2796': ['minus', 'subtract'],
  '1f408': ['cat', 'meow'],
  '1f431': ['kitten'],
  '1f415': ['dog', 'woof'],
  '1f436': ['puppy'],
  '1f407': ['rabbit'],
  '1f430': ['bunny'],
  '1f95d': ['kiwi'],
  '1f373': ['cooking'],
};

/** Zulip's emoticon translations (the sender's translate_emoticons setting). */
export const EMOTICON_CONVERSIONS: Readonly<Record<string, string>> = {
  ':)': ':smile:',
  '(:': ':smile:',
  ':(': ':frown:',
  '<3': ':heart:',
  ':|': ':neutral:',
  ':/': ':confused:',
  ';)': ':wink:',
  ':D': ':grinning:',
  ':o': ':open_mouth:',
  ':O': ':open_mouth:',
  ':p': ':stuck_out_tongue:',
  ':P': ':stuck_out_tongue:',
};

interface EmojiTables {
  nameToCode: Map<string, string>;
  codeToNames: Map<string, string[]>;
}

let tables: EmojiTables | undefined;

function toZulipName(shortName: string): string {
  // Keep the leading "-" of "-1"; elsewhere Zulip names use underscores.
  return shortName.replace(/(?<=.)-/g, '_');
}

function fromUnicodeName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '');
}

function load(): EmojiTables {
  const require = createRequire(import.meta.url);
  const data = require('emoji-datasource/emoji.json') as DatasourceEmoji[];
  const nameToCode = new Map<string, string>();
  const codeToNames = new Map<string, string[]>();
  for (const [code, names] of Object.entries(ZULIP_NAMES)) {
    codeToNames.set(code, [...names]);
    for (const n of names) nameToCode.set(n, code);
  }
  const pending: [string, DatasourceEmoji][] = [];
  for (const e of data) {
    if (!e.has_img_google || e.category === 'Component') continue;
    if (e.subcategory === 'family' && e.unified.includes('200D')) continue;
    const code = unqualifiedCode(e.unified);
    if (codeToNames.has(code)) continue;
    pending.push([code, e]);
  }
  for (const [code, e] of pending) {
    const names = [e.short_name, ...e.short_names.filter((n) => n !== e.short_name)]
      .map(toZulipName)
      .filter((n) => !nameToCode.has(n));
    if (names.length === 0 && e.name) {
      // Every datasource name was taken by a Zulip rename; fall back to the Unicode name.
      const fallback = fromUnicodeName(e.name);
      if (!nameToCode.has(fallback)) names.push(fallback);
    }
    if (names.length === 0) continue;
    codeToNames.set(code, names);
    for (const n of names) nameToCode.set(n, code);
  }
  return { nameToCode, codeToNames };
}

function getTables(): EmojiTables {
  tables ??= load();
  return tables;
}

function unqualifiedCode(unified: string): string {
  return unified
    .toLowerCase()
    .split('-')
    .filter((p) => p !== 'fe0f')
    .join('-');
}

/** The emoji_code of a Unicode emoji name (including aliases), e.g. "smile" -> "1f642". */
export function emojiNameToCode(name: string): string | undefined {
  return getTables().nameToCode.get(name);
}

/** The canonical name of an emoji_code, e.g. "1f642" -> "smile". */
export function emojiCodeToName(code: string): string | undefined {
  return getTables().codeToNames.get(code)?.[0];
}

/**
 * Every Unicode emoji: code -> [canonical name, ...aliases]. This is the `code_to_names`
 * object of the document behind `server_emoji_data_url`.
 */
export function emojiCodeToNames(): Record<string, string[]> {
  return Object.fromEntries([...getTables().codeToNames].map(([k, v]) => [k, [...v]]));
}

/** The document served at `server_emoji_data_url`. */
export function serverEmojiData(): { code_to_names: Record<string, string[]> } {
  return { code_to_names: emojiCodeToNames() };
}

/** The emoji_code for a Unicode emoji string (U+FE0F ignored), if Zulip knows the emoji. */
export function unicodeEmojiToCode(emoji: string): string | undefined {
  const code = [...emoji.replaceAll('\uFE0F', '')]
    .map((c) => c.codePointAt(0)!.toString(16).padStart(4, '0'))
    .join('-');
  return getTables().codeToNames.has(code) ? code : undefined;
}

/** Zulip's own extra emoji (reaction_type "zulip_extra_emoji"). */
export const ZULIP_EXTRA_EMOJI = {
  name: 'zulip',
  code: 'zulip',
  url: '/static/generated/emoji/images/emoji/unicode/zulip.png',
} as const;
