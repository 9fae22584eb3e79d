import { memo } from 'preact/compat';
import { useEffect } from 'preact/hooks';
import { fetchTopics, markNarrowRead } from '../state/actions';
import { narrowChannel, narrowDm, viewToHash, type View } from '../state/narrow';
import { userTopicKey, VISIBILITY, type Presence, type State } from '../state/store';
import type { Subscription } from '../api/types';
import { dmKey } from '../state/unread';
import { names } from './App';
import { topicDisplay } from './format';
import { sidebarViews } from '../settings/live';

const unreadLabel = (name: string, n: number) => (n > 0 ? `${name} ${n} unread` : name);

function Count({ n }: { n: number }) {
  return n > 0 ? (
    <span class="count" aria-hidden="true">
      {n}
    </span>
  ) : null;
}

function PresenceDot({ p }: { p: Presence | undefined }) {
  const status = p ?? 'offline';
  return <span class={`presence ${status}`} title={status} aria-label={status} role="img" />;
}

/**
 * One channel in the list. A row re-renders only when its channel, count or address changed,
 * or while it is open (its topics show): a busy channel does not re-render the others.
 */
const ChannelRow = memo(
  function ChannelRow({ s, sub, count, hash, open, currentTopic }: { s: State; sub: Subscription; count: number; hash: string; open: boolean; currentTopic: string | undefined }) {
    return (
      <li>
        <a
          href={hash}
          class={`channel${open && currentTopic === undefined ? ' active' : ''}${sub.is_muted ? ' muted' : ''}`}
          aria-label={unreadLabel(sub.name, count)}
          aria-current={open && currentTopic === undefined ? 'page' : undefined}
        >
          <span class="swatch" style={{ background: sub.color }} aria-hidden="true">
            {sub.invite_only ? '🔒' : '#'}
          </span>
          <span class="label">{sub.name}</span>
          <Count n={count} />
        </a>
        {open && count > 0 && currentTopic === undefined && (
          <button class="link-button channel-read" onClick={() => void markNarrowRead([{ operator: 'channel', operand: sub.stream_id }])}>
            Mark #{sub.name} as read
          </button>
        )}
        {open && <TopicList s={s} streamId={sub.stream_id} currentTopic={currentTopic} />}
      </li>
    );
  },
  (a, b) => !a.open && !b.open && a.sub === b.sub && a.count === b.count && a.hash === b.hash,
);

export function LeftSidebar({ s, view }: { s: State; view: View }) {
  const terms = view.kind === 'narrow' ? view.terms : [];
  const { channel: currentChannel, topic: currentTopic } = narrowChannel(terms);
  const currentDm = narrowDm(terms);
  const n = names(s);
  useEffect(() => {
    if (currentChannel !== undefined) void fetchTopics(currentChannel);
  }, [currentChannel]);

  const subs = [...s.subs.values()].sort((a, b) => Number(!!b.pin_to_top) - Number(!!a.pin_to_top) || a.name.localeCompare(b.name));
  const isView = (hash: string) => viewToHash(view, n) === hash;
  const dmConversations = new Map(s.recentDms);
  for (const c of s.unread.conversations()) {
    if (c.conv.kind !== 'dm') continue;
    const k = dmKey(c.conv.user_ids);
    if (!dmConversations.has(k)) dmConversations.set(k, { ids: c.conv.user_ids, maxId: c.maxId });
  }
  const dms = [...dmConversations.values()].sort((a, b) => b.maxId - a.maxId).slice(0, 15);

  return (
    <aside class="left">
      <nav aria-label="Views">
        <ul class="plain">
          {sidebarViews(s.reg.navigation_views).map(({ fragment, name: label }) => {
            const href = `#${fragment}`;
            const count = fragment === 'inbox' ? s.unread.total : fragment === 'narrow/is/mentioned' ? s.unread.mentions : fragment === 'drafts' ? s.drafts.length : 0;
            return (
              <li key={href}>
                <a href={href} class={isView(href) ? 'active' : ''} aria-current={isView(href) ? 'page' : undefined} aria-label={count ? `${label} ${count}${href === '#drafts' ? '' : ' unread'}` : label}>
                  <span class="label">{label}</span>
                  <Count n={count} />
                </a>
              </li>
            );
          })}
        </ul>
      </nav>
      <nav aria-label="Channels">
        <h2 class="section">Channels</h2>
        <ul class="plain">
          {subs.map((sub) => {
            const count = sub.is_muted ? 0 : s.unread.streamCount(sub.stream_id);
            const hash = viewToHash({ kind: 'narrow', terms: [{ operator: 'channel', operand: sub.stream_id }] }, n);
            return <ChannelRow key={sub.stream_id} s={s} sub={sub} count={count} hash={hash} open={sub.stream_id === currentChannel} currentTopic={currentTopic} />;
          })}
        </ul>
      </nav>
      <nav aria-label="Direct messages">
        <h2 class="section">Direct messages</h2>
        <ul class="plain">
          {dms.map(({ ids }) => {
            const label = ids.map((id) => s.users.get(id)?.full_name ?? `User ${id}`).join(', ');
            const count = s.unread.dmCount(ids);
            const active = currentDm !== undefined && dmKey(currentDm) === dmKey(ids);
            return (
              <li key={dmKey(ids)}>
                <a href={viewToHash({ kind: 'narrow', terms: [{ operator: 'dm', operand: ids }] }, n)} class={active ? 'active' : ''} aria-label={unreadLabel(label, count)}>
                  {ids.length === 1 ? <PresenceDot p={s.presence.get(ids[0]!)} /> : <span class="presence group" aria-hidden="true" />}
                  <span class="label">{label}</span>
                  <Count n={count} />
                </a>
              </li>
            );
          })}
        </ul>
      </nav>
    </aside>
  );
}

function TopicList({ s, streamId, currentTopic }: { s: State; streamId: number; currentTopic?: string }) {
  const topics = s.topics.get(streamId) ?? [];
  const n = names(s);
  return (
    <ul class="plain topics" aria-label="Topics">
      {topics.slice(0, 30).map((t) => {
        const count = s.unread.topicCount(streamId, t.name);
        const policy = s.userTopics.get(userTopicKey(streamId, t.name));
        const resolved = t.name.startsWith('✔ ');
        const display = topicDisplay(t.name, s);
        const active = currentTopic !== undefined && currentTopic.toLowerCase() === t.name.toLowerCase();
        const terms = [
          { operator: 'channel', operand: streamId },
          { operator: 'topic', operand: t.name },
        ];
        return (
          <li key={t.name}>
            <a
              href={viewToHash({ kind: 'narrow', terms }, n)}
              class={`topic${active ? ' active' : ''}${policy === VISIBILITY.MUTED ? ' muted' : ''}${t.name === '' ? ' empty-topic' : ''}`}
              aria-label={unreadLabel(display, policy === VISIBILITY.MUTED ? 0 : count)}
              aria-current={active ? 'page' : undefined}
            >
              <span class="label">{resolved ? display : display}</span>
              {policy === VISIBILITY.FOLLOWED && (
                <span class="mark" title="Followed" aria-hidden="true">
                  ★
                </span>
              )}
              {policy === VISIBILITY.MUTED && (
                <span class="mark" title="Muted" aria-hidden="true">
                  🔇
                </span>
              )}
              <Count n={policy === VISIBILITY.MUTED ? 0 : count} />
            </a>
            {active && count > 0 && (
              <button class="link-button" onClick={() => void markNarrowRead(terms)}>
                Mark as read
              </button>
            )}
          </li>
        );
      })}
    </ul>
  );
}

/** Re-renders only when people or presence change (applyEvent replaces those maps then). */
export const RightSidebar = memo(function RightSidebar({ s }: { s: State; users: State['users']; presence: State['presence'] }) {
  const rank = (p: Presence | undefined) => (p === 'active' ? 0 : p === 'idle' ? 1 : 2);
  const users = [...s.users.values()]
    .filter((u) => u.is_active && !u.is_bot)
    .sort((a, b) => rank(s.presence.get(a.user_id)) - rank(s.presence.get(b.user_id)) || a.full_name.localeCompare(b.full_name))
    .slice(0, 300);
  const n = names(s);
  return (
    <aside class="right" aria-label="Users">
      <h2 class="section">Users</h2>
      <ul class="plain">
        {users.map((u) => (
          <li key={u.user_id}>
            <a href={viewToHash({ kind: 'narrow', terms: [{ operator: 'dm', operand: [u.user_id] }] }, n)} aria-label={`${u.full_name} (${s.presence.get(u.user_id) ?? 'offline'})`}>
              <PresenceDot p={s.presence.get(u.user_id)} />
              <span class="label">{u.full_name}</span>
            </a>
          </li>
        ))}
      </ul>
    </aside>
  );
}, (a, b) => a.users === b.users && a.presence === b.presence);
