import { forwardRef, memo } from 'preact/compat';
import { useEffect, useImperativeHandle, useRef, useState } from 'preact/hooks';
import { ApiError, NetworkError, upload } from '../api/client';
import type { Draft, Message } from '../api/types';
import { fetchTopics, renderPreview, saveDraft, sendMessage, sendTyping, type Destination } from '../state/actions';
import { narrowChannel, narrowDm, type View } from '../state/narrow';
import type { State } from '../state/store';
import { resolver } from './App';
import { dmIdsOf, emojiGlyph, withEmojiGlyphs } from './format';
import { knownEmoji, unicodeEmoji, unicodeLoaded } from '../api/emoji';
import { SuggestInput } from './SuggestInput';
import { SnippetPicker } from '../settings/SnippetPicker';

export interface ComposeHandle {
  reply(m?: Message): void;
  newTopic(): void;
  newDm(): void;
  quote(m: Message, raw: string): void;
  restore(d: Draft): void;
  isOpen(): boolean;
}

type Mode = 'stream' | 'private';

interface Suggestion {
  label: string;
  insert: string;
}

/** The word being typed before the caret, when it starts a mention, channel link or emoji. */
function activeToken(text: string, caret: number): { start: number; kind: '@' | '#' | ':'; query: string; silent: boolean } | null {
  const before = text.slice(0, caret);
  const m = /(^|\s)([@#:])(?:_?\*{0,2})([^\s@#:*]*(?: [^\s@#:*]*)?)$/.exec(before);
  if (!m) return null;
  if (m[2] === ':' && m[3]!.length < 2) return null;
  return { start: before.length - m[0].length + m[1]!.length, kind: m[2] as '@' | '#' | ':', query: m[3]!.toLowerCase(), silent: m[0].includes(`${m[2]}_`) };
}

/**
 * The parts of the state compose shows, by identity (the maps are replaced when they change),
 * so that a frame of incoming messages does not re-render compose while someone types.
 */
interface ComposeProps {
  s: State;
  view: View;
  subs: State['subs'];
  users: State['users'];
  settings: State['settings'];
  groups: State['userGroups'];
}

const sameProps = (a: ComposeProps, b: ComposeProps) => a.view === b.view && a.subs === b.subs && a.users === b.users && a.settings === b.settings && a.groups === b.groups;

export const Compose = memo(forwardRef<ComposeHandle, ComposeProps>(function Compose({ s, view }, ref) {
  const [mode, setMode] = useState<Mode>('stream');
  const [streamId, setStreamId] = useState<number | null>(null);
  const [topic, setTopic] = useState('');
  const [to, setTo] = useState('');
  const [content, setContent] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [preview, setPreview] = useState<string | null>(null);
  const [uploads, setUploads] = useState<{ name: string; progress: number }[]>([]);
  // Suggestions whose data arrives later (a channel's topics, the emoji names) show when it does.
  const [, setArrived] = useState(0);
  const refresh = () => setArrived((n) => n + 1);
  const [caret, setCaret] = useState(0);
  const [choice, setChoice] = useState(0);
  const textarea = useRef<HTMLTextAreaElement>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const typing = useRef<{ dest: Destination | null; lastStart: number; stopTimer: ReturnType<typeof setTimeout> | null }>({ dest: null, lastStart: 0, stopTimer: null });

  const destination = (): Destination | null => {
    if (mode === 'stream') return streamId !== null ? { type: 'stream', streamId, topic: topic.trim() } : null;
    const ids = to
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean)
      .map((x) => resolver(s).userId(x));
    if (ids.length === 0 || ids.some((x) => x === undefined)) return null;
    return { type: 'private', to: ids as number[] };
  };

  // Compose follows the narrow while it is empty; leaving a narrow with text saves a draft.
  const viewKey = JSON.stringify(view);
  const lastView = useRef(viewKey);
  useEffect(() => {
    if (lastView.current === viewKey) return;
    lastView.current = viewKey;
    if (content.trim()) {
      void saveDraft(destination(), content);
      setContent('');
    }
    if (view.kind !== 'narrow') return;
    const { channel, topic: t } = narrowChannel(view.terms);
    const dm = narrowDm(view.terms);
    if (channel !== undefined) {
      setMode('stream');
      setStreamId(channel);
      setTopic(t ?? '');
    } else if (dm) {
      setMode('private');
      setTo(dm.map((id) => s.users.get(id)?.email ?? String(id)).join(', '));
    }
  }, [viewKey]);

  useEffect(() => {
    if (streamId !== null) return;
    const { channel, topic: t } = view.kind === 'narrow' ? narrowChannel(view.terms) : {};
    const dm = view.kind === 'narrow' ? narrowDm(view.terms) : undefined;
    if (channel !== undefined) {
      setStreamId(channel);
      setTopic(t ?? '');
      return;
    }
    if (dm) {
      setMode('private');
      setTo(dm.map((id) => s.users.get(id)?.email ?? String(id)).join(', '));
    }
    if (s.subs.size) setStreamId([...s.subs.values()].sort((a, b) => a.name.localeCompare(b.name))[0]!.stream_id);
  }, [s.subs.size, viewKey]);

  useEffect(() => {
    if (streamId !== null) void fetchTopics(streamId);
  }, [streamId]);

  useImperativeHandle(ref, () => ({
    reply(m?: Message) {
      if (m?.type === 'stream') {
        setMode('stream');
        setStreamId(m.stream_id!);
        setTopic(m.subject);
      } else if (m) {
        setMode('private');
        setTo(dmIdsOf(m, s).map((id) => s.users.get(id)?.email ?? '').join(', '));
      }
      textarea.current?.focus();
    },
    newTopic() {
      setMode('stream');
      setTopic('');
      setTimeout(() => document.getElementById('compose-topic')?.focus());
    },
    newDm() {
      setMode('private');
      setTo('');
      setTimeout(() => document.getElementById('compose-to')?.focus());
    },
    quote(m: Message, raw: string) {
      this.reply(m);
      const who = `@_**${m.sender_full_name}|${m.sender_id}**`;
      const quoted = `${who} [said](${window.location.origin}/#narrow/near/${m.id}):\n\`\`\`quote\n${raw}\n\`\`\`\n`;
      setContent((c) => (c ? `${c}\n${quoted}` : quoted));
      textarea.current?.focus();
    },
    restore(d: Draft) {
      if (d.type === 'stream' && d.to[0] !== undefined) {
        setMode('stream');
        setStreamId(d.to[0]);
        setTopic(d.topic);
      } else if (d.type === 'private') {
        setMode('private');
        setTo(d.to.map((id) => s.users.get(id)?.email ?? String(id)).join(', '));
      }
      setContent(d.content);
      textarea.current?.focus();
    },
    isOpen() {
      return document.activeElement === textarea.current;
    },
  }));

  const noteTyping = (text: string) => {
    const dest = destination();
    const t = typing.current;
    if (t.stopTimer) clearTimeout(t.stopTimer);
    if (!dest || !text.trim()) {
      if (t.dest) void sendTyping('stop', t.dest);
      t.dest = null;
      return;
    }
    // Zulip's typing protocol: "start" again every started_wait_period, "stop" after stopped_wait_period idle.
    const now = Date.now();
    if (!t.dest || JSON.stringify(t.dest) !== JSON.stringify(dest) || now - t.lastStart > s.realm.typing_started_wait_period) {
      t.dest = dest;
      t.lastStart = now;
      void sendTyping('start', dest);
    }
    t.stopTimer = setTimeout(() => {
      if (t.dest) void sendTyping('stop', t.dest);
      t.dest = null;
    }, s.realm.typing_stopped_wait_period);
  };

  const send = () => {
    setError(null);
    const text = content.trim();
    if (!text) return;
    if (mode === 'stream' && streamId === null) return setError('Choose a channel.');
    if (mode === 'stream' && !topic.trim() && s.realm.mandatory_topics) return setError('Topics are required in this organization.');
    if (mode === 'private' && !destination()) return setError('Choose who to send this to: email addresses, separated by commas.');
    if (text.length > s.realm.max_message_length) return setError(`Messages are limited to ${s.realm.max_message_length} characters.`);
    const dest = destination()!;
    if (typing.current.stopTimer) clearTimeout(typing.current.stopTimer);
    if (typing.current.dest) void sendTyping('stop', typing.current.dest);
    typing.current.dest = null;
    setContent('');
    setPreview(null);
    sendMessage(dest, text).catch((e) => {
      if (e instanceof ApiError) setError(e.message);
      else if (!(e instanceof NetworkError)) throw e;
    });
  };

  const insertAtCaret = (text: string) => {
    const el = textarea.current;
    const at = el ? el.selectionStart : content.length;
    setContent((c) => c.slice(0, at) + text + c.slice(at));
  };

  const uploadFiles = (files: FileList | File[]) => {
    for (const file of Array.from(files)) {
      const entry = { name: file.name, progress: 0 };
      setUploads((u) => [...u, entry]);
      upload(file, (p) => setUploads((u) => u.map((x) => (x === entry ? Object.assign(entry, { progress: p }) : x))))
        .then((r) => insertAtCaret(`[${r.filename}](${r.url})\n`))
        .catch((e) => setError(e instanceof ApiError ? e.message : `Could not upload ${file.name}.`))
        .finally(() => setUploads((u) => u.filter((x) => x !== entry)));
    }
  };

  const token = activeToken(content, caret);
  const suggestions: Suggestion[] = token ? suggest(token, s, mode === 'stream' ? streamId : null, refresh) : [];

  const accept = (sug: Suggestion) => {
    if (!token) return;
    const next = content.slice(0, token.start) + sug.insert + content.slice(caret);
    const pos = token.start + sug.insert.length;
    // The text and caret change now, not after the render: a key typed in between went where
    // the caret was before (after the replaced text).
    const el = textarea.current;
    if (el) {
      el.value = next;
      el.setSelectionRange(pos, pos);
    }
    setContent(next);
    setCaret(pos);
  };

  // Read when suggesting, not when rendering: compose does not re-render as topics arrive.
  const topics = () => (streamId !== null ? (s.topics.get(streamId) ?? []) : []);
  const subs = [...s.subs.values()].sort((a, b) => a.name.localeCompare(b.name));

  return (
    <section
      class="compose"
      aria-label="Compose"
      onDragOver={(e) => e.preventDefault()}
      onDrop={(e) => {
        if (e.dataTransfer?.files.length) {
          e.preventDefault();
          uploadFiles(e.dataTransfer.files);
        }
      }}
    >
      <div class="compose-modes">
        <button
          type="button"
          class={mode === 'stream' ? 'active' : ''}
          aria-pressed={mode === 'stream'}
          onClick={() => {
            setMode('stream');
            setTopic('');
            setTimeout(() => document.getElementById('compose-topic')?.focus());
          }}
        >
          New topic
        </button>
        <button
          type="button"
          class={mode === 'private' ? 'active' : ''}
          aria-pressed={mode === 'private'}
          onClick={() => {
            setMode('private');
            setTimeout(() => document.getElementById('compose-to')?.focus());
          }}
        >
          New direct message
        </button>
      </div>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          send();
        }}
      >
        <div class="compose-recipient">
          {mode === 'stream' ? (
            <>
              <select aria-label="Channel" value={streamId ?? ''} onChange={(e) => setStreamId(Number((e.target as HTMLSelectElement).value))}>
                {subs.map((sub) => (
                  <option key={sub.stream_id} value={sub.stream_id}>
                    #{sub.name}
                  </option>
                ))}
              </select>
              <span aria-hidden="true">›</span>
              <SuggestInput
                key="topic"
                id="compose-topic"
                label="Topic"
                placeholder={s.realm.mandatory_topics ? 'Topic' : s.realm.empty_topic_display_name}
                maxLength={60}
                value={topic}
                onInput={setTopic}
                suggestions={(v) => topics().map((t) => t.name).filter((n) => n && n.toLowerCase().includes(v.toLowerCase()) && n !== v)}
              />
            </>
          ) : (
            <>
              <SuggestInput
                key="to"
                id="compose-to"
                label="To"
                placeholder="Email addresses, separated by commas"
                value={to}
                onInput={setTo}
                suggestions={(v) => {
                  const last = (v.split(',').pop() ?? '').trim().toLowerCase();
                  if (!last) return [];
                  return [...s.users.values()]
                    .filter((u) => u.is_active && u.user_id !== s.me.user_id && (u.full_name.toLowerCase().includes(last) || u.email.toLowerCase().startsWith(last)))
                    .map((u) => `${u.full_name} <${u.email}>`);
                }}
                apply={(v, picked) => {
                  const parts = v.split(',').slice(0, -1).map((x) => x.trim()).filter(Boolean);
                  return [...parts, /<([^>]+)>$/.exec(picked)![1]!].join(', ') + ', ';
                }}
              />
            </>
          )}
        </div>
        {preview !== null ? (
          <div class="rendered-markdown preview" aria-label="Preview" dangerouslySetInnerHTML={{ __html: withEmojiGlyphs(preview, s.settings.emojiset) }} />
        ) : (
          <textarea
            ref={textarea}
            aria-label="Message"
            placeholder={s.settings.enter_sends ? 'Message (Enter to send, Shift+Enter for a new line)' : 'Message (Ctrl+Enter to send)'}
            rows={3}
            value={content}
            onInput={(e) => {
              const el = e.target as HTMLTextAreaElement;
              setContent(el.value);
              setCaret(el.selectionStart);
              setChoice(0);
              noteTyping(el.value);
            }}
            onKeyUp={(e) => setCaret((e.target as HTMLTextAreaElement).selectionStart)}
            onClick={(e) => setCaret((e.target as HTMLTextAreaElement).selectionStart)}
            onPaste={(e) => {
              if (e.clipboardData?.files.length) {
                e.preventDefault();
                uploadFiles(e.clipboardData.files);
              }
            }}
            onKeyDown={(e) => {
              if (suggestions.length && (e.key === 'ArrowDown' || e.key === 'ArrowUp')) {
                e.preventDefault();
                setChoice((c) => (c + (e.key === 'ArrowDown' ? 1 : suggestions.length - 1)) % suggestions.length);
                return;
              }
              if (suggestions.length && (e.key === 'Tab' || (e.key === 'Enter' && !e.shiftKey))) {
                e.preventDefault();
                accept(suggestions[Math.min(choice, suggestions.length - 1)]!);
                return;
              }
              if (e.key !== 'Enter') return;
              const sends = s.settings.enter_sends ? !e.shiftKey && !e.ctrlKey && !e.metaKey : e.ctrlKey || e.metaKey;
              if (sends) {
                e.preventDefault();
                send();
              }
            }}
          />
        )}
        {suggestions.length > 0 && (
          <ul class="typeahead" role="listbox" aria-label="Suggestions">
            {suggestions.map((x, i) => (
              <li key={x.insert} role="option" aria-selected={i === choice} class={i === choice ? 'active' : ''} onMouseDown={(e) => {
                e.preventDefault();
                accept(x);
              }}>
                {x.label}
              </li>
            ))}
          </ul>
        )}
        {uploads.map((u) => (
          <div key={u.name} class="upload-progress">
            Uploading {u.name}… <progress value={u.progress} max={1} aria-label={`Uploading ${u.name}`} />
          </div>
        ))}
        {error && (
          <p class="form-error" role="alert">
            {error}
          </p>
        )}
        <div class="compose-actions">
          <input ref={fileInput} type="file" multiple hidden onChange={(e) => {
            const f = (e.target as HTMLInputElement).files;
            if (f) uploadFiles(f);
            (e.target as HTMLInputElement).value = '';
          }} />
          <button type="button" onClick={() => fileInput.current?.click()}>
            Upload files
          </button>
          <SnippetPicker s={s} onInsert={insertAtCaret} />
          <button
            type="button"
            aria-pressed={preview !== null}
            onClick={() => {
              if (preview !== null) setPreview(null);
              else
                renderPreview(content || ' ')
                  .then(setPreview)
                  .catch((e) => setError(e instanceof ApiError ? e.message : 'Preview failed.'));
            }}
          >
            {preview !== null ? 'Edit' : 'Preview'}
          </button>
          <button type="submit" class="primary">
            Send
          </button>
        </div>
      </form>
    </section>
  );
}), sameProps);

/** Zulip's wildcard mentions: everyone in the channel (or the conversation), or the topic's participants. */
const CHANNEL_WILDCARDS = [
  { name: 'all', what: 'Notify channel' },
  { name: 'everyone', what: 'Notify channel' },
  { name: 'channel', what: 'Notify channel' },
  { name: 'topic', what: 'Notify topic' },
];
const DM_WILDCARDS = [
  { name: 'all', what: 'Notify recipients' },
  { name: 'everyone', what: 'Notify recipients' },
];

/** `streamId` is the channel being written to, null for a direct message. */
function suggest(token: { kind: '@' | '#' | ':'; query: string; silent: boolean }, s: State, streamId: number | null, refresh: () => void): Suggestion[] {
  const q = token.query;
  if (token.kind === '@') {
    const at = token.silent ? '@_' : '@';
    const users = [...s.users.values()]
      .filter((u) => u.is_active && (u.full_name.toLowerCase().includes(q) || u.email.toLowerCase().startsWith(q)))
      .slice(0, 8)
      .map((u) => ({ label: `${u.full_name} (${u.email})`, insert: `${at}**${u.full_name}|${u.user_id}** ` }));
    const groups = [...s.userGroups.values()]
      .filter((g) => !g.is_system_group && !g.deactivated && g.name.toLowerCase().includes(q))
      .slice(0, 4)
      .map((g) => ({ label: `${g.name} (group)`, insert: `${at}*${g.name}* ` }));
    // Silent wildcards notify no one, so Zulip does not offer them.
    const wildcards = token.silent ? [] : (streamId !== null ? CHANNEL_WILDCARDS : DM_WILDCARDS).filter((w) => w.name.startsWith(q)).map((w) => ({ label: `${w.name} (${w.what})`, insert: `@**${w.name}** ` }));
    return [...wildcards, ...groups, ...users].slice(0, 10);
  }
  if (token.kind === '#') {
    const [chan, topicQ] = q.split('>');
    const subs = [...s.subs.values()];
    if (topicQ !== undefined) {
      const sub = subs.find((x) => x.name.toLowerCase() === chan);
      if (!sub) return [];
      if (!s.topics.has(sub.stream_id)) void fetchTopics(sub.stream_id).then(() => s.topics.has(sub.stream_id) && refresh());
      return (s.topics.get(sub.stream_id) ?? [])
        .filter((t) => t.name.toLowerCase().includes(topicQ))
        .slice(0, 8)
        .map((t) => ({ label: `#${sub.name} › ${t.name}`, insert: `#**${sub.name}>${t.name}** ` }));
    }
    return subs
      .filter((x) => x.name.toLowerCase().includes(q))
      .sort((a, b) => Number(b.stream_id === streamId) - Number(a.stream_id === streamId))
      .slice(0, 8)
      .map((x) => ({ label: `#${x.name}`, insert: `#**${x.name}** ` }));
  }
  if (!unicodeLoaded()) void unicodeEmoji().then((list) => list.length > 0 && refresh());
  return knownEmoji()
    .filter((e) => e.name.includes(q))
    .sort((a, b) => Number(!a.name.startsWith(q)) - Number(!b.name.startsWith(q)))
    .slice(0, 8)
    .map((e) => ({ label: `${e.code ? `${emojiGlyph(e.code)} ` : ''}:${e.name}:`, insert: `:${e.name}: ` }));
}
