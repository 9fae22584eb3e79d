import { store } from '../state/store';

export type EmojiEntry = { name: string; code?: string; url?: string };

let unicode: EmojiEntry[] | null = null;
let loading: Promise<EmojiEntry[]> | null = null;

/** The server's Unicode emoji names (register's server_emoji_data_url), fetched once when first needed. */
export function unicodeEmoji(): Promise<EmojiEntry[]> {
  if (unicode) return Promise.resolve(unicode);
  const url = store.state?.emojiDataUrl;
  if (!url) return Promise.resolve([]);
  // Same origin whatever host name the server's EXTERNAL_URL names.
  loading ??= fetch(new URL(url, window.location.href).pathname)
    .then((r) => r.json())
    .then((d: { code_to_names: Record<string, string[]> }) => {
      const out: EmojiEntry[] = [];
      for (const [code, names] of Object.entries(d.code_to_names)) for (const name of names) out.push({ name, code });
      unicode = out;
      store.changed();
      return out;
    })
    .catch(() => {
      loading = null;
      return [];
    });
  return loading;
}

export const unicodeLoaded = (): boolean => unicode !== null;

/** What is known now (the custom emoji, and the Unicode ones once fetched); starts the fetch. */
export function knownEmoji(): EmojiEntry[] {
  if (!unicode) void unicodeEmoji();
  const custom = [...(store.state?.realmEmoji.values() ?? [])].filter((e) => !e.deactivated).map((e) => ({ name: e.name, url: e.source_url }));
  return [...custom, ...(unicode ?? [])];
}
