import { useEffect } from 'preact/hooks';
import { encodeHashComponent, slug } from '../state/narrow';
import { store } from '../state/store';
import type { ComposeHandle } from './Compose';

const SHORTCUTS: [string, string][] = [
  ['j / ↓', 'Next message'],
  ['k / ↑', 'Previous message'],
  ['r / Enter', 'Reply to the selected message'],
  ['c', 'New topic'],
  ['x', 'New direct message'],
  ['n', 'Next unread topic'],
  ['/', 'Search'],
  ['Esc', 'Close, or leave compose'],
  ['?', 'This list'],
];

function typingInField(e: KeyboardEvent): boolean {
  const t = e.target as HTMLElement;
  return t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName);
}

/** Keys the focused control has a use for: anything inside a dialog (settings, edit history), Enter on a button or link. */
function forTheControl(e: KeyboardEvent): boolean {
  const t = e.target as HTMLElement;
  return !!t.closest?.('[role="dialog"]') || (e.key === 'Enter' && !!t.closest?.('button, a[href]'));
}

/** Zulip's core keyboard shortcuts, active whenever focus is not in a text field. */
export function useShortcuts(h: { compose: { current: ComposeHandle | null }; search: { current: HTMLInputElement | null }; showHelp(): void; closeAll(): void }): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        h.closeAll();
        if (typingInField(e)) (e.target as HTMLElement).blur();
        return;
      }
      if (typingInField(e) || forTheControl(e) || e.ctrlKey || e.metaKey || e.altKey) return;
      const articles = [...document.querySelectorAll<HTMLElement>('article.message')];
      const cur = document.querySelector<HTMLElement>('article.message.selected');
      const i = cur ? articles.indexOf(cur) : -1;
      const select = (el: HTMLElement | undefined) => {
        if (!el) return;
        el.click();
        el.scrollIntoView({ block: 'nearest' });
      };
      switch (e.key) {
        case 'j':
        case 'ArrowDown':
          select(articles[i + 1]);
          break;
        case 'k':
        case 'ArrowUp':
          select(articles[Math.max(0, i - 1)]);
          break;
        case 'r':
        case 'Enter': {
          const id = Number(cur?.dataset.messageId);
          h.compose.current?.reply(store.state?.messages.get(id));
          break;
        }
        case 'c':
          h.compose.current?.newTopic();
          break;
        case 'x':
          h.compose.current?.newDm();
          break;
        case '/':
          h.search.current?.focus();
          break;
        case '?':
          h.showHelp();
          break;
        case 'n': {
          const next = store.state?.unread.conversations().find((c) => c.conv.kind === 'stream');
          if (next && next.conv.kind === 'stream') {
            const { stream_id, topic } = next.conv;
            const name = store.state!.channelNames.get(stream_id) ?? '';
            window.location.hash = `#narrow/channel/${encodeHashComponent(slug(stream_id, name))}/topic/${encodeHashComponent(topic)}`;
          }
          break;
        }
        default:
          return;
      }
      e.preventDefault();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
}

export function Shortcuts({ onClose }: { onClose: () => void }) {
  return (
    <div class="modal-backdrop" onClick={onClose}>
      <div class="modal" role="dialog" aria-modal="true" aria-label="Keyboard shortcuts" onClick={(e) => e.stopPropagation()}>
        <h2>Keyboard shortcuts</h2>
        <table>
          <tbody>
            {SHORTCUTS.map(([k, d]) => (
              <tr key={k}>
                <td>
                  <kbd>{k}</kbd>
                </td>
                <td>{d}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <button onClick={onClose} autoFocus>
          Close
        </button>
      </div>
    </div>
  );
}
