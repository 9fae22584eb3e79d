import { useState } from 'preact/hooks';
import type { State } from '../state/store';

/** Compose's "Snippets" menu (not named "Saved…": a button named like "Save" would be ambiguous): inserts a snippet's text at the caret (register's saved_snippets, kept live). */
export function SnippetPicker({ s, onInsert }: { s: State; onInsert: (text: string) => void }) {
  const [open, setOpen] = useState(false);
  const snippets: { id: number; title: string; content: string }[] = s.reg.saved_snippets ?? [];
  return (
    <span class="menu snippet-picker">
      <button type="button" aria-haspopup="menu" aria-expanded={open} onClick={() => setOpen(!open)}>
        Snippets
      </button>
      {open && (
        <div class="menu-popup snippet-popup" role="menu" aria-label="Snippets">
          {snippets.map((x) => (
            <button
              type="button"
              role="menuitem"
              onClick={() => {
                setOpen(false);
                onInsert(x.content);
              }}
            >
              {x.title}
            </button>
          ))}
          <a role="menuitem" href="#settings/saved-snippets" onClick={() => setOpen(false)}>
            {snippets.length ? 'Manage saved snippets' : 'Create a new saved snippet'}
          </a>
        </div>
      )}
    </span>
  );
}
