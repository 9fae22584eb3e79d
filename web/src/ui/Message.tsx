import { useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import type { Message } from '../api/types';
import { deleteMessage, editHistory, editMessage, markUnreadFrom, rawMessage, readReceipts, retrySend, toggleReaction, toggleStar, type EditHistoryEntry, type MessageChange } from '../state/actions';
import { encodeHashComponent, slug } from '../state/narrow';
import type { State } from '../state/store';
import type { ComposeHandle } from './Compose';
import { emojiGlyph, formatFull, formatTime, withEmojiGlyphs } from './format';
import { EmojiPicker } from './EmojiPicker';
import { Avatar } from './Avatar';

interface Props {
  m: Message;
  s: State;
  grouped: boolean;
  selected: boolean;
  onSelect: (id: number) => void;
  compose: { current: ComposeHandle | null };
}

function messageLink(m: Message, s: State): string {
  const base = `${window.location.origin}/#narrow`;
  if (m.type === 'stream') return `${base}/channel/${encodeHashComponent(slug(m.stream_id!, s.channelNames.get(m.stream_id!) ?? ''))}/topic/${encodeHashComponent(m.subject)}/near/${m.id}`;
  const ids = (m.display_recipient as { id: number }[]).map((r) => r.id);
  return `${base}/dm/${encodeHashComponent(`${ids.join(',')}-dm`)}/near/${m.id}`;
}

/** Spoilers open on click, as in Zulip's rendered_markdown. */
function onContentClick(e: MouseEvent): void {
  const header = (e.target as HTMLElement).closest('.spoiler-header');
  if (header) {
    const block = header.parentElement!;
    const open = block.classList.toggle('spoiler-open');
    block.querySelector('.spoiler-content')?.setAttribute('aria-hidden', String(!open));
  }
}

/** A reaction's emoji: the Unicode glyph, or the custom emoji's image (by its id, the reaction's emoji_code). */
function ReactionGlyph({ r, s }: { r: { name: string; code: string; type: string }; s: State }) {
  if (r.type === 'unicode_emoji' && s.settings.emojiset !== 'text') return <span aria-hidden="true">{emojiGlyph(r.code)}</span>;
  const custom = r.type === 'realm_emoji' ? s.realmEmoji.get(r.code) : undefined;
  if (custom) return <img class="reaction-emoji" src={custom.source_url} alt="" width={16} height={16} />;
  return <span aria-hidden="true">{`:${r.name}:`}</span>;
}

/**
 * Whether a move posts Notification Bot's notices to the new and the old topic: Zulip's
 * defaults (new yes, old no), then the person's last choice, as Zulip's message_edit keeps
 * notify_new_thread_default and notify_old_thread_default to move several topics alike.
 */
const notifyDefaults = { newThread: true, oldThread: false };

interface Editing {
  /** The content as written; null when only moving (content cannot change with the channel). */
  raw: string | null;
  content: string;
  topic: string;
  streamId: number | null;
  propagate: string;
  notifyNew: boolean;
  notifyOld: boolean;
}

export function MessageView({ m, s, grouped, selected, onSelect, compose }: Props) {
  const [editing, setEditing] = useState<Editing | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [menu, setMenu] = useState(false);
  // Popups are placed on the screen (fixed), below the button or above it when there is more
  // room there, so that neither the feed's edge nor compose covers them.
  const [popupAt, setPopupAt] = useState<Record<string, string>>({});
  const placePopup = (e: MouseEvent) => {
    const r = (e.currentTarget as HTMLElement).getBoundingClientRect();
    const right = `${Math.max(4, window.innerWidth - r.right)}px`;
    setPopupAt(window.innerHeight - r.bottom >= r.top ? { top: `${r.bottom + 4}px`, right } : { bottom: `${window.innerHeight - r.top + 4}px`, right });
  };
  const [picker, setPicker] = useState(false);
  const [dialog, setDialog] = useState<{ kind: 'history'; entries: EditHistoryEntry[] } | { kind: 'receipts'; ids: number[] } | null>(null);
  const mine = m.sender_id === s.me.user_id;
  const unread = !m.flags.includes('read');
  const mentioned = m.flags.includes('mentioned') || m.flags.includes('wildcard_mentioned');
  const starred = m.flags.includes('starred');

  const run = (f: () => Promise<unknown>) => {
    setError(null);
    f().catch((e) => {
      if (e instanceof ApiError) setError(e.message);
      else throw e;
    });
  };

  const startEdit = () =>
    run(async () => {
      setMenu(false);
      const raw = await rawMessage(m.id);
      setEditing({ raw, content: raw, topic: m.subject, streamId: m.stream_id ?? null, propagate: 'change_one', notifyNew: notifyDefaults.newThread, notifyOld: notifyDefaults.oldThread });
    });

  const startMove = () => {
    setMenu(false);
    setEditing({ raw: null, content: '', topic: m.subject, streamId: m.stream_id ?? null, propagate: 'change_all', notifyNew: notifyDefaults.newThread, notifyOld: notifyDefaults.oldThread });
  };

  const quote = () =>
    run(async () => {
      setMenu(false);
      const raw = await rawMessage(m.id);
      compose.current?.quote(m, raw);
    });

  const reactions = new Map<string, { name: string; code: string; type: string; users: number[] }>();
  for (const r of m.reactions) {
    const k = `${r.reaction_type}:${r.emoji_code}`;
    const e = reactions.get(k) ?? { name: r.emoji_name, code: r.emoji_code, type: r.reaction_type, users: [] };
    e.users.push(r.user_id);
    reactions.set(k, e);
  }

  return (
    <article
      class={`message${grouped ? ' grouped' : ''}${mentioned ? ' mentioned' : ''}${unread ? ' unread' : ''}${selected ? ' selected' : ''}${m.local_id ? ' local' : ''}`}
      data-message-id={m.id}
      aria-labelledby={`m${m.id}-sender`}
      onClick={() => onSelect(m.id)}
    >
      {grouped ? (
        <span class="sr-only" id={`m${m.id}-sender`}>
          {m.sender_full_name}
        </span>
      ) : (
        <Avatar url={s.users.get(m.sender_id)?.avatar_url ?? m.avatar_url} name={m.sender_full_name} id={m.sender_id} size={36} />
      )}
      <div class="message-body">
        {!grouped && (
          <div class="message-head">
            <span class="sender" id={`m${m.id}-sender`}>
              {m.sender_full_name}
            </span>
            <time dateTime={new Date(m.timestamp * 1000).toISOString()} title={formatFull(m.timestamp, s)}>
              {formatTime(m.timestamp, s)}
            </time>
          </div>
        )}
        {editing ? (
          <form
            class="edit-form"
            onSubmit={(e) => {
              e.preventDefault();
              run(async () => {
                const change: MessageChange = {};
                if (editing.raw !== null && editing.content !== editing.raw) change.content = editing.content;
                if (m.type === 'stream' && editing.topic !== m.subject) change.topic = editing.topic;
                if (m.type === 'stream' && editing.streamId !== null && editing.streamId !== m.stream_id) change.stream_id = editing.streamId;
                if (change.topic !== undefined || change.stream_id !== undefined) {
                  change.propagate_mode = editing.propagate;
                  change.send_notification_to_new_thread = editing.notifyNew;
                  change.send_notification_to_old_thread = editing.notifyOld;
                }
                if (Object.keys(change).length === 0) {
                  setEditing(null);
                  return;
                }
                await editMessage(m.id, change);
                if (change.propagate_mode !== undefined) {
                  notifyDefaults.newThread = editing.notifyNew;
                  notifyDefaults.oldThread = editing.notifyOld;
                }
                setEditing(null);
              });
            }}
          >
            {m.type === 'stream' && (
              <div class="edit-topic">
                {editing.raw === null && (
                  <select aria-label="Move to channel" value={String(editing.streamId)} onChange={(e) => setEditing({ ...editing, streamId: Number((e.target as HTMLSelectElement).value) })}>
                    {[...s.subs.values()]
                      .sort((a, b) => a.name.localeCompare(b.name))
                      .map((x) => (
                        <option key={x.stream_id} value={String(x.stream_id)}>
                          #{x.name}
                        </option>
                      ))}
                  </select>
                )}
                <input aria-label="Edit topic" value={editing.topic} onInput={(e) => setEditing({ ...editing, topic: (e.target as HTMLInputElement).value })} />
                <select aria-label="Move" value={editing.propagate} onChange={(e) => setEditing({ ...editing, propagate: (e.target as HTMLSelectElement).value })}>
                  <option value="change_one">Move only this message</option>
                  <option value="change_later">Move this and all following messages in this topic</option>
                  <option value="change_all">Move all messages in this topic</option>
                </select>
              </div>
            )}
            {m.type === 'stream' && (editing.raw === null || editing.topic !== m.subject) && (
              <div class="edit-notices">
                <label>
                  <input type="checkbox" checked={editing.notifyNew} onChange={(e) => setEditing({ ...editing, notifyNew: (e.target as HTMLInputElement).checked })} />
                  Send automated notice to new topic
                </label>
                <label>
                  <input type="checkbox" checked={editing.notifyOld} onChange={(e) => setEditing({ ...editing, notifyOld: (e.target as HTMLInputElement).checked })} />
                  Send automated notice to old topic
                </label>
              </div>
            )}
            {editing.raw !== null && <textarea aria-label="Edit message" value={editing.content} rows={4} onInput={(e) => setEditing({ ...editing, content: (e.target as HTMLTextAreaElement).value })} />}
            <div class="edit-buttons">
              <button type="submit" class="primary">
                Save
              </button>
              <button type="button" onClick={() => setEditing(null)}>
                Cancel
              </button>
            </div>
          </form>
        ) : (
          // Search results carry the server's highlighted copy of the content.
          <div class="rendered-markdown" dangerouslySetInnerHTML={{ __html: withEmojiGlyphs(m.match_content ?? m.content, s.settings.emojiset) }} onClick={onContentClick} />
        )}
        <div class="message-meta">
          {grouped && (
            <time class="grouped-time" dateTime={new Date(m.timestamp * 1000).toISOString()} title={formatFull(m.timestamp, s)}>
              {formatTime(m.timestamp, s)}
            </time>
          )}
          {m.last_edit_timestamp && <span class="mark">edited</span>}
          {!m.last_edit_timestamp && m.last_moved_timestamp && <span class="mark">moved</span>}
          {m.local_id && !m.failed && <span class="mark">sending…</span>}
          {m.failed && (
            <span class="failed" role="alert">
              Not sent.{' '}
              <button class="link-button" onClick={() => run(() => retrySend(m.id))}>
                Retry
              </button>
            </span>
          )}
        </div>
        {reactions.size > 0 && (
          <div class="reactions">
            {[...reactions.values()].map((r) => {
              const me = r.users.includes(s.me.user_id);
              return (
                <button
                  key={`${r.type}${r.code}`}
                  class={`reaction${me ? ' mine' : ''}`}
                  aria-pressed={me}
                  aria-label={`${r.name} ${r.users.length}`}
                  title={r.users.map((id) => s.users.get(id)?.full_name ?? id).join(', ')}
                  onClick={(e) => {
                    e.stopPropagation();
                    run(() => toggleReaction(m.id, r.name, r.code, r.type));
                  }}
                >
                  <ReactionGlyph r={r} s={s} /> <span aria-hidden="true">{r.users.length}</span>
                </button>
              );
            })}
          </div>
        )}
        {error && (
          <p class="form-error" role="alert">
            {error}
          </p>
        )}
      </div>
      {dialog && (
        <div class="modal-backdrop" onClick={(e) => { e.stopPropagation(); setDialog(null); }}>
          <div class="modal" role="dialog" aria-modal="true" aria-label={dialog.kind === 'history' ? 'Edit history' : 'Read receipts'} onClick={(e) => e.stopPropagation()}>
            <h2>{dialog.kind === 'history' ? 'Edit history' : 'Read by'}</h2>
            {dialog.kind === 'history' ? (
              <ol class="history">
                {dialog.entries.map((h, i) => (
                  <li key={i}>
                    <div class="meta">
                      {formatFull(h.timestamp, s)} · {h.user_id !== null ? (s.users.get(h.user_id)?.full_name ?? 'Someone') : 'Someone'}
                      {i === 0 ? ' (original)' : ''}
                      {h.prev_topic !== undefined && h.topic !== undefined && ` · topic: ${h.prev_topic} → ${h.topic}`}
                    </div>
                    {h.rendered_content && <div class="rendered-markdown" dangerouslySetInnerHTML={{ __html: withEmojiGlyphs(h.rendered_content, s.settings.emojiset) }} />}
                  </li>
                ))}
              </ol>
            ) : dialog.ids.length === 0 ? (
              <p>No one has read this message yet.</p>
            ) : (
              <ul class="plain">
                {dialog.ids.map((id) => (
                  <li key={id}>{s.users.get(id)?.full_name ?? `User ${id}`}</li>
                ))}
              </ul>
            )}
            <button onClick={() => setDialog(null)} autoFocus>
              Close
            </button>
          </div>
        </div>
      )}
      {!m.local_id && (
        <div class="message-controls">
          <button class="icon-button" aria-label="Add reaction" onClick={(e) => { e.stopPropagation(); placePopup(e); setPicker(!picker); }}>
            ☺
          </button>
          <button class={`icon-button${starred ? ' starred' : ''}`} aria-label={starred ? 'Unstar' : 'Star'} aria-pressed={starred} onClick={(e) => { e.stopPropagation(); run(() => toggleStar(m.id)); }}>
            {starred ? '★' : '☆'}
          </button>
          <button class="icon-button" aria-label="Message actions" aria-haspopup="menu" aria-expanded={menu} onClick={(e) => { e.stopPropagation(); placePopup(e); setMenu(!menu); }}>
            ⋮
          </button>
          {menu && (
            <div class="menu-popup fixed" style={popupAt} role="menu">
              <button role="menuitem" onClick={quote}>
                Quote and reply
              </button>
              {mine && (
                <button role="menuitem" onClick={startEdit}>
                  Edit
                </button>
              )}
              {m.type === 'stream' && (
                <button role="menuitem" onClick={startMove}>
                  Move message
                </button>
              )}
              <button role="menuitem" onClick={() => { setMenu(false); void navigator.clipboard?.writeText(messageLink(m, s)); }}>
                Copy link to message
              </button>
              <button role="menuitem" onClick={() => { setMenu(false); run(() => markUnreadFrom(m.id)); }}>
                Mark as unread from here
              </button>
              {(m.last_edit_timestamp || m.last_moved_timestamp) && (
                <button role="menuitem" onClick={() => { setMenu(false); run(async () => setDialog({ kind: 'history', entries: await editHistory(m.id) })); }}>
                  View edit history
                </button>
              )}
              {s.realm.enable_read_receipts && (
                <button role="menuitem" onClick={() => { setMenu(false); run(async () => setDialog({ kind: 'receipts', ids: await readReceipts(m.id) })); }}>
                  View read receipts
                </button>
              )}
              {mine && (
                <button
                  role="menuitem"
                  onClick={() => {
                    setMenu(false);
                    if (window.confirm('Delete this message?')) run(() => deleteMessage(m.id));
                  }}
                >
                  Delete
                </button>
              )}
            </div>
          )}
          {picker && (
            <EmojiPicker
              at={popupAt}
              onPick={(name) => {
                setPicker(false);
                run(() => toggleReaction(m.id, name));
              }}
              onClose={() => setPicker(false)}
            />
          )}
        </div>
      )}
    </article>
  );
}
