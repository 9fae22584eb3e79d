import { useEffect, useRef, useState } from 'preact/hooks';
import { knownEmoji, unicodeEmoji, type EmojiEntry as Entry } from '../api/emoji';
import { emojiGlyph } from './format';

const POPULAR = ['+1', 'tada', 'smile', 'heart', 'working_on_it', 'octopus'];

export function EmojiPicker({ onPick, onClose, at }: { onPick: (name: string) => void; onClose: () => void; at: Record<string, string> }) {
  const [, setLoaded] = useState(0);
  const [q, setQ] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    input.current?.focus();
    void unicodeEmoji().then((list) => setLoaded(list.length));
  }, []);
  const pool: Entry[] = knownEmoji();
  const query = q.trim().toLowerCase().replaceAll(' ', '_');
  const shown = query
    ? pool.filter((e) => e.name.includes(query)).sort((a, b) => Number(!a.name.startsWith(query)) - Number(!b.name.startsWith(query))).slice(0, 60)
    : [...POPULAR.map((n) => pool.find((e) => e.name === n)).filter((e): e is Entry => !!e), ...pool.slice(0, 54)];
  return (
    <div class="emoji-picker fixed" style={at} role="dialog" aria-label="Emoji picker" onClick={(e) => e.stopPropagation()} onKeyDown={(e) => e.key === 'Escape' && onClose()}>
      <input ref={input} type="search" aria-label="Search emoji" placeholder="Search emoji" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} onKeyDown={(e) => {
        if (e.key === 'Enter' && shown[0]) {
          e.preventDefault();
          onPick(shown[0].name);
        }
      }} />
      <div class="emoji-grid">
        {shown.map((e) => (
          <button key={e.name} type="button" aria-label={e.name} title={`:${e.name}:`} onClick={() => onPick(e.name)}>
            {e.url ? <img src={e.url} alt="" width={20} height={20} /> : emojiGlyph(e.code!)}
          </button>
        ))}
      </div>
    </div>
  );
}
