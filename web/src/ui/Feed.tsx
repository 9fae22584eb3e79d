import { memo } from 'preact/compat';
import { useLayoutEffect, useRef, useState, useEffect, useCallback } from 'preact/hooks';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { Message } from '../api/types';
import { feedPosition, loadNewer, loadOlder, noteSeen } from '../state/actions';
import { narrowChannel, narrowDm, viewToHash } from '../state/narrow';
import type { State } from '../state/store';
import { dmKey } from '../state/unread';
import { names, navigate } from './App';
import type { ComposeHandle } from './Compose';
import { dmIdsOf, dmNames, formatDate, recipientKey, topicDisplay } from './format';
import { MessageView } from './Message';

/** Consecutive messages of one sender in one conversation within this long share a header. */
const GROUP_SECONDS = 10 * 60;

export function Feed({ s, compose }: { s: State; compose: { current: ComposeHandle | null } }) {
  const list = s.list;
  const scroller = useRef<HTMLDivElement>(null);
  const ids = list?.ids ?? [];
  const virtualizer = useVirtualizer({
    count: ids.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 64,
    overscan: 8,
    getItemKey: (i) => ids[i]!,
  });
  const [selected, setSelected] = useState<number | null>(null);
  // The message at the top of the view whose recipient bar has scrolled away: its bar stays on top.
  const [sticky, setSticky] = useState<number | null>(null);

  // Opening a narrow: scroll to its anchor (the first unread message) once it has loaded.
  const placed = useRef<unknown>(null);
  useLayoutEffect(() => {
    if (!list || placed.current === list || list.anchorId === null || ids.length === 0) return;
    placed.current = list;
    const i = ids.indexOf(list.anchorId);
    const last = i === ids.length - 1;
    stick.current = last && list.foundNewest;
    virtualizer.scrollToIndex(Math.max(0, i), { align: last ? 'end' : 'start' });
    setSelected(list.anchorId);
  }, [list, list?.version]);

  // Older messages added above: keep the message at the top where it was on screen.
  const keep = useRef<{ id: number; delta: number } | null>(null);
  useLayoutEffect(() => {
    const k = keep.current;
    const el = scroller.current;
    if (!k || !el) return;
    const i = ids.indexOf(k.id);
    if (i < 0) return;
    keep.current = null;
    const start = virtualizer.getOffsetForIndex(i, 'start')?.[0];
    if (start !== undefined) el.scrollTop = start - k.delta;
  }, [ids[0]]);

  // At the bottom, the feed stays there as messages arrive and rows are measured. Only the
  // reader (wheel, touch, keys, the scrollbar) decides to leave the bottom or come back to it;
  // scrolls the virtual list makes itself while measuring do not.
  const stick = useRef(false);
  const userScrolled = useRef(false);
  const totalSize = virtualizer.getTotalSize();
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stick.current && placed.current === list && list?.foundNewest) el.scrollTop = el.scrollHeight;
  }, [ids.at(-1), totalSize]);
  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const mark = () => (userScrolled.current = true);
    const events = ['wheel', 'touchmove', 'keydown', 'pointerdown'] as const;
    for (const e of events) el.addEventListener(e, mark, { passive: true });
    return () => {
      for (const e of events) el.removeEventListener(e, mark);
    };
  }, [scroller.current]);

  const items = virtualizer.getVirtualItems();

  const onScroll = useCallback(() => {
    const el = scroller.current;
    const l = s.list;
    if (!el || !l) return;
    if (userScrolled.current) {
      userScrolled.current = false;
      stick.current = l.foundNewest && el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    }
    const vis = virtualizer.getVirtualItems();
    const top = el.scrollTop;
    const bottom = top + el.clientHeight;
    const seen: number[] = [];
    let first: number | null = null;
    for (const it of vis) {
      if (it.end > top && it.start < bottom) {
        if (first === null && it.start >= top - 20) first = l.ids[it.index]!;
        if (it.end <= bottom + 20 || it.start <= top) seen.push(l.ids[it.index]!);
      }
    }
    feedPosition.anchorId = first;
    const topItem = vis.find((it) => it.end > top);
    let stickyId: number | null = null;
    if (topItem && top > 0) {
      const m = s.messages.get(l.ids[topItem.index]!);
      const prev = topItem.index > 0 ? s.messages.get(l.ids[topItem.index - 1]!) : undefined;
      // A row's own bar (about 40 px with its margin) still partly in view: no second bar over it.
      const ownBarShown = topItem.start >= top - 40 && (!prev || !m || recipientKey(prev) !== recipientKey(m));
      if (m && !ownBarShown) stickyId = m.id;
    }
    setSticky(stickyId);
    if (placed.current === l) noteSeen(seen);
    if (vis.length && vis[0]!.index < 5 && !l.foundOldest && !l.loadingOlder && placed.current === l) {
      const firstVisible = vis.find((it) => it.end > top) ?? vis[0]!;
      keep.current = { id: l.ids[firstVisible.index]!, delta: firstVisible.start - top };
      void loadOlder();
    }
    if (vis.length && vis[vis.length - 1]!.index > l.ids.length - 5 && !l.foundNewest && !l.loadingNewer && placed.current === l) void loadNewer();
  }, [s]);

  useEffect(() => {
    const t = setTimeout(onScroll, 50);
    return () => clearTimeout(t);
  });
  useEffect(() => {
    const onVisible = () => onScroll();
    document.addEventListener('visibilitychange', onVisible);
    return () => document.removeEventListener('visibilitychange', onVisible);
  }, [onScroll]);

  if (!list) return null;
  const terms = list.terms;
  const { channel, topic } = narrowChannel(terms);
  const dm = narrowDm(terms);
  const title = channel !== undefined ? `#${s.channelNames.get(channel) ?? 'channel'}${topic !== undefined ? ` › ${topicDisplay(topic, s)}` : ''}` : dm ? `Direct messages with ${dmNames(dm, s)}` : viewTitle(terms);
  const typing = typingNames(s, channel, topic, dm);
  const stickyMessage = sticky !== null && list.ids.includes(sticky) ? s.messages.get(sticky) : undefined;

  return (
    <section class="feed" aria-label={title}>
      <h1 class="feed-title">{title}</h1>
      <div class="feed-scroll" ref={scroller} onScroll={onScroll} tabIndex={-1}>
        {stickyMessage && (
          <div class="sticky-bar" role="group" aria-label="Current conversation">
            <RecipientBar m={stickyMessage} s={s} showDate />
          </div>
        )}
        {list.error && (
          <p class="feed-note" role="alert">
            {list.error}
          </p>
        )}
        {list.foundOldest && ids.length > 0 && <p class="feed-note">This is the beginning of the conversation.</p>}
        {ids.length === 0 && list.foundOldest && list.foundNewest && <p class="feed-note">No messages here yet.</p>}
        {ids.length === 0 && !list.foundNewest && !list.error && (
          <p class="feed-note" role="status">
            Loading…
          </p>
        )}
        <div style={{ height: `${totalSize}px`, position: 'relative' }}>
          <div style={{ position: 'absolute', top: 0, left: 0, right: 0, transform: `translateY(${items[0]?.start ?? 0}px)` }}>
            {items.map((it) => {
              const id = ids[it.index]!;
              const m = s.messages.get(id);
              if (!m) return <div key={id} data-index={it.index} ref={virtualizer.measureElement} />;
              const prev = it.index > 0 ? s.messages.get(ids[it.index - 1]!) : undefined;
              const newRecipient = !prev || recipientKey(prev) !== recipientKey(m);
              const newDay = !prev || formatDate(prev.timestamp, s) !== formatDate(m.timestamp, s);
              const grouped = !newRecipient && prev!.sender_id === m.sender_id && m.timestamp - prev!.timestamp < GROUP_SECONDS;
              return (
                <div key={id} data-index={it.index} ref={virtualizer.measureElement} class="row">
                  {(newRecipient || newDay) && <RecipientBar m={m} s={s} showDate />}
                  <Row m={m} s={s} settings={s.settings} grouped={grouped} selected={selected === id} onSelect={setSelected} compose={compose} avatar={s.users.get(m.sender_id)?.avatar_url} />
                </div>
              );
            })}
          </div>
        </div>
        {list.loadingNewer && <p class="feed-note">Loading…</p>}
      </div>
      {typing && (
        <p class="typing" role="status" aria-live="polite">
          {typing}
        </p>
      )}
    </section>
  );
}

// `avatar`: the sender's current picture (from the people list, kept live), so a new one re-renders the row.
// `settings` is passed apart from the state it belongs to: the state object stays the same
// while apply.ts replaces its settings, so only this prop tells the row a setting changed.
const Row = memo(function Row(p: {
  m: Message;
  s: State;
  settings: State['settings'];
  grouped: boolean;
  selected: boolean;
  onSelect: (id: number) => void;
  compose: { current: ComposeHandle | null };
  avatar: string | null | undefined;
}) {
  return <MessageView {...p} />;
}, (a, b) => a.m === b.m && a.grouped === b.grouped && a.selected === b.selected && a.settings === b.settings && a.avatar === b.avatar);

function viewTitle(terms: { operator: string; operand: unknown }[]): string {
  if (terms.length === 0) return 'Combined feed';
  if (terms.length === 1 && terms[0]!.operator === 'is' && terms[0]!.operand === 'starred') return 'Starred messages';
  if (terms.length === 1 && terms[0]!.operator === 'is' && terms[0]!.operand === 'mentioned') return 'Mentions';
  return 'Search results';
}

function RecipientBar({ m, s, showDate }: { m: Message; s: State; showDate: boolean }) {
  const n = names(s);
  if (m.type === 'stream') {
    const name = s.channelNames.get(m.stream_id!) ?? String(m.display_recipient);
    const color = s.subs.get(m.stream_id!)?.color;
    return (
      <div class="recipient-bar" style={color ? { borderLeftColor: color } : undefined}>
        <a href={viewToHash({ kind: 'narrow', terms: [{ operator: 'channel', operand: m.stream_id! }] }, n)}>#{name}</a>
        <span aria-hidden="true"> › </span>
        <a class={m.subject === '' ? 'empty-topic' : ''} href={viewToHash({ kind: 'narrow', terms: [{ operator: 'channel', operand: m.stream_id! }, { operator: 'topic', operand: m.subject }] }, n)}>
          {/* Search results: the server's escaped topic with its matches highlighted. */}
          {m.match_subject && m.subject !== '' ? <span dangerouslySetInnerHTML={{ __html: m.match_subject }} /> : topicDisplay(m.subject, s)}
        </a>
        {showDate && <span class="bar-date">{formatDate(m.timestamp, s)}</span>}
      </div>
    );
  }
  const ids = dmIdsOf(m, s);
  return (
    <div class="recipient-bar dm">
      <a href={viewToHash({ kind: 'narrow', terms: [{ operator: 'dm', operand: ids.length ? ids : [s.me.user_id] }] }, n)} onClick={(e) => {
        e.preventDefault();
        navigate({ kind: 'narrow', terms: [{ operator: 'dm', operand: ids.length ? ids : [s.me.user_id] }] }, s);
      }}>
        You and {dmNames(ids, s)}
      </a>
      {showDate && <span class="bar-date">{formatDate(m.timestamp, s)}</span>}
    </div>
  );
}

function typingNames(s: State, channel?: number, topic?: string, dm?: number[]): string | null {
  let key: string | null = null;
  if (channel !== undefined && topic !== undefined) key = `s${channel}\u0000${topic.toLowerCase()}`;
  else if (dm) key = `d${dmKey(dm)}`;
  if (!key) return null;
  const who = s.typing.filter((t) => t.conversation === key).map((t) => s.users.get(t.userId)?.full_name ?? 'Someone');
  if (who.length === 0) return null;
  return `${who.join(', ')} ${who.length === 1 ? 'is' : 'are'} typing…`;
}
