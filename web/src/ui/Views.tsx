import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, NetworkError } from '../api/client';
import { deleteDraft, markNarrowRead } from '../state/actions';
import { viewToHash, type Term } from '../state/narrow';
import type { State } from '../state/store';
import { names } from './App';
import type { ComposeHandle } from './Compose';
import { dmNames, formatFull, topicDisplay } from './format';

/** The box above Inbox and Recent conversations that keeps the rows whose names contain what is typed. */
function FilterBox({ value, onInput }: { value: string; onInput: (v: string) => void }) {
  return (
    <input
      class="filter-box"
      type="search"
      aria-label="Filter conversations"
      placeholder="Filter conversations"
      value={value}
      onInput={(e) => onInput((e.target as HTMLInputElement).value)}
      onKeyDown={(e) => e.key === 'Escape' && onInput('')}
    />
  );
}

const matches = (label: string, filter: string) => label.toLowerCase().includes(filter.trim().toLowerCase());

/** Inbox: every conversation with unread messages, newest first. Looking here marks nothing read. */
export function Inbox({ s }: { s: State }) {
  const n = names(s);
  const [filter, setFilter] = useState('');
  const convs = s.unread.conversations();
  return (
    <section class="list-view" aria-label="Inbox">
      <h1 class="feed-title">Inbox</h1>
      {convs.length > 0 && <FilterBox value={filter} onInput={setFilter} />}
      {convs.length === 0 ? (
        <p class="feed-note">You have no unread messages.</p>
      ) : (
        <ul class="plain conversations">
          {convs.map(({ conv, count }) => {
            let terms: Term[];
            let label: string;
            if (conv.kind === 'stream') {
              terms = [
                { operator: 'channel', operand: conv.stream_id },
                { operator: 'topic', operand: conv.topic },
              ];
              label = `#${s.channelNames.get(conv.stream_id) ?? conv.stream_id} › ${topicDisplay(conv.topic, s)}`;
            } else {
              terms = [{ operator: 'dm', operand: conv.user_ids }];
              label = dmNames(conv.user_ids, s);
            }
            if (!matches(label, filter)) return null;
            return (
              <li key={viewToHash({ kind: 'narrow', terms }, n)}>
                <a href={viewToHash({ kind: 'narrow', terms }, n)} aria-label={`${label} ${count} unread`}>
                  <span class="label">{label}</span>
                  <span class="count" aria-hidden="true">
                    {count}
                  </span>
                </a>
                <button class="link-button" onClick={() => void markNarrowRead(terms)}>
                  Mark as read
                </button>
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}

/** Recent conversations: the latest topics and DMs across the organization (GET /messages, newest). */
export function Recent({ s }: { s: State }) {
  const [rows, setRows] = useState<{ key: string; terms: Term[]; label: string; last: number; sender: string }[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [filter, setFilter] = useState('');
  const n = names(s);
  useEffect(() => {
    api('GET', '/messages', { anchor: 'newest', num_before: 400, num_after: 0, narrow: [], apply_markdown: false })
      .then((r) => {
        const seen = new Map<string, { key: string; terms: Term[]; label: string; last: number; sender: string }>();
        for (const m of [...r.messages].reverse()) {
          const terms: Term[] =
            m.type === 'stream'
              ? [
                  { operator: 'channel', operand: m.stream_id },
                  { operator: 'topic', operand: m.subject },
                ]
              : [{ operator: 'dm', operand: m.display_recipient.map((x: { id: number }) => x.id).filter((id: number) => id !== s.me.user_id) }];
          const key = viewToHash({ kind: 'narrow', terms }, n).toLowerCase();
          if (seen.has(key)) continue;
          const label = m.type === 'stream' ? `#${s.channelNames.get(m.stream_id) ?? m.display_recipient} › ${topicDisplay(m.subject, s)}` : dmNames(terms[0]!.operand as number[], s);
          seen.set(key, { key, terms, label, last: m.timestamp, sender: m.sender_full_name });
        }
        setRows([...seen.values()]);
      })
      .catch((e) => {
        if (e instanceof ApiError || e instanceof NetworkError) setError(e.message);
        else throw e;
      });
  }, []);
  return (
    <section class="list-view" aria-label="Recent conversations">
      <h1 class="feed-title">Recent conversations</h1>
      {error && <p class="form-error">{error}</p>}
      {!rows && !error && <p class="feed-note">Loading…</p>}
      {rows && rows.length > 0 && <FilterBox value={filter} onInput={setFilter} />}
      <ul class="plain conversations">
        {rows?.filter((r) => matches(`${r.label} ${r.sender}`, filter)).map((r) => (
          <li key={r.key}>
            <a href={viewToHash({ kind: 'narrow', terms: r.terms }, n)}>
              <span class="label">{r.label}</span>
              <span class="meta">
                {r.sender} · {formatFull(r.last, s)}
              </span>
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function Drafts({ s, compose }: { s: State; compose: { current: ComposeHandle | null } }) {
  const drafts = [...s.drafts].sort((a, b) => b.timestamp - a.timestamp);
  return (
    <section class="list-view" aria-label="Drafts">
      <h1 class="feed-title">Drafts</h1>
      {drafts.length === 0 && <p class="feed-note">No drafts.</p>}
      <ul class="plain conversations">
        {drafts.map((d) => (
          <li key={d.id}>
            <button class="draft" onClick={() => compose.current?.restore(d)}>
              <span class="label">
                {d.type === 'stream' ? `#${s.channelNames.get(d.to[0]!) ?? ''} › ${topicDisplay(d.topic, s)}` : d.type === 'private' ? dmNames(d.to, s) : 'No recipient'}
              </span>
              <span class="meta">{d.content.slice(0, 140)}</span>
            </button>
            {d.id !== undefined && (
              <button class="link-button" onClick={() => void deleteDraft(d.id!)}>
                Delete draft
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
