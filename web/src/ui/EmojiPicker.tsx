import { useEffect, useRef, useState } from 'preact/hooks';
import { store } from '../state/store';
import { emojiGlyph } from './format';

type Entry = { name: string; glyph?: string; url?: string };

let unicode: Promise<Entry[]> | null = null;

/** The server's Unicode emoji names (server_emoji_data_url), fetched the first time a picker opens. */
function unicodeEmoji(url: string): Promise<Entry[]> {
  // Same origin whatever host name the server's EXTERNAL_URL names.
  unicode ??= fetch(new URL(url, window.location.href).pathname)
    .then((r) => r.json())
    .then((d: { code_to_names: Record<string, string[]> }) => {
      const out: Entry[] = [];
      for (const [code, names] of Object.entries(d.code_to_names)) for (const name of names) out.push({ name, glyph: emojiGlyph(code) });
      return out;
    })
    .catch(() => {
      unicode = null;
      return [];
    });
  return unicode;
}

const POPULAR = ['+1', 'tada', 'smile', 'heart', 'working_on_it', 'octopus'];

export function EmojiPicker({ onPick, onClose }: { onPick: (name: string) => void; onClose: () => void }) {
  const [all, setAll] = useState<Entry[]>([]);
  const [q, setQ] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    input.current?.focus();
    const s = store.state;
    if (s?.emojiDataUrl) void unicodeEmoji(s.emojiDataUrl).then(setAll);
  }, []);
  const custom: Entry[] = [...(store.state?.realmEmoji.values() ?? [])].filter((e) => !e.deactivated).map((e) => ({ name: e.name, url: e.source_url }));
  const pool = [...custom, ...all];
  const query = q.trim().toLowerCase().replaceAll(' ', '_');
  const shown = query
    ? pool.filter((e) => e.name.includes(query)).sort((a, b) => Number(!a.name.startsWith(query)) - Number(!b.name.startsWith(query))).slice(0, 60)
    : [...POPULAR.map((n) => pool.find((e) => e.name === n)).filter((e): e is Entry => !!e), ...pool.slice(0, 54)];
  return (
    <div class="emoji-picker" role="dialog" aria-label="Emoji picker" onClick={(e) => e.stopPropagation()} onKeyDown={(e) => e.key === 'Escape' && onClose()}>
      <input ref={input} type="search" aria-label="Search emoji" placeholder="Search emoji" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} onKeyDown={(e) => {
        if (e.key === 'Enter' && shown[0]) {
          e.preventDefault();
          onPick(shown[0].name);
        }
      }} />
      <div class="emoji-grid">
        {shown.map((e) => (
          <button key={e.name} type="button" aria-label={e.name} title={`:${e.name}:`} onClick={() => onPick(e.name)}>
            {e.url ? <img src={e.url} alt="" width={20} height={20} /> : e.glyph}
          </button>
        ))}
      </div>
    </div>
  );
}
