import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, NetworkError } from '../api/client';
import { boot, logOut, openView, view as currentView } from '../state/actions';
import { hashToView, parseSearch, termsToSearch, viewToHash, type Names, type View } from '../state/narrow';
import { useStore, type State } from '../state/store';
import { Compose, type ComposeHandle } from './Compose';
import { Feed } from './Feed';
import { Drafts, Inbox, Recent } from './Views';
import { LeftSidebar, RightSidebar } from './Sidebars';
import { Shortcuts, useShortcuts } from './Shortcuts';
import { Avatar } from './Avatar';
import { SuggestInput } from './SuggestInput';
import { isSettingsHash, LazySettings } from '../settings/Lazy';

export function names(s: State): Names {
  return {
    channelName: (id) => s.channelNames.get(id),
    userName: (id) => s.users.get(id)?.full_name,
  };
}

export function resolver(s: State) {
  return {
    channelId: (name: string) => {
      for (const [id, n] of s.channelNames) if (n.toLowerCase() === name.toLowerCase()) return id;
      return /^\d+$/.test(name) ? Number(name) : undefined;
    },
    userId: (who: string) => {
      const w = who.toLowerCase();
      for (const u of s.users.values()) if (u.email.toLowerCase() === w || u.full_name.toLowerCase() === w) return u.user_id;
      return /^\d+$/.test(who) ? Number(who) : undefined;
    },
  };
}

export function navigate(v: View, s: State): void {
  const hash = viewToHash(v, names(s));
  if (window.location.hash !== hash) window.location.hash = hash;
  else openView(v);
}

export function App({ registration }: { registration: Promise<Record<string, any>> }) {
  const s = useStore();
  const [bootError, setBootError] = useState<string | null>(null);
  const [v, setV] = useState<View>(hashToView(window.location.hash));
  const [menuOpen, setMenuOpen] = useState(false);
  const [leftOpen, setLeftOpen] = useState(false);
  const [rightOpen, setRightOpen] = useState(false);
  const [showShortcuts, setShowShortcuts] = useState(false);
  const [settingsHash, setSettingsHash] = useState<string | null>(isSettingsHash(window.location.hash) ? window.location.hash : null);
  /** Where closing the settings returns to. */
  const appHash = useRef(isSettingsHash(window.location.hash) ? '#inbox' : window.location.hash || '#inbox');
  const compose = useRef<ComposeHandle>(null);
  const search = useRef<HTMLInputElement>(null);

  useEffect(() => {
    const onLoggedOut = () => window.location.assign(`/login${window.location.hash}`);
    window.addEventListener('parley:logged-out', onLoggedOut);
    boot(registration)
      .then(() => openView(hashToView(window.location.hash)))
      .catch((e) => {
        if (e instanceof ApiError || e instanceof NetworkError) setBootError(e.message);
        else throw e;
      });
    const onHash = () => {
      setMenuOpen(false);
      if (isSettingsHash(window.location.hash)) return setSettingsHash(window.location.hash);
      setSettingsHash(null);
      appHash.current = window.location.hash || '#inbox';
      const nv = hashToView(window.location.hash);
      setV(nv);
      setLeftOpen(false);
      openView(nv);
    };
    window.addEventListener('hashchange', onHash);
    return () => {
      window.removeEventListener('hashchange', onHash);
      window.removeEventListener('parley:logged-out', onLoggedOut);
    };
  }, []);

  useShortcuts({ compose, search, showHelp: () => setShowShortcuts(true), closeAll: () => {
    setShowShortcuts(false);
    setMenuOpen(false);
  } });

  // The person's theme (Zulip's color_scheme: 1 follows the system, 2 dark, 3 light) picks the
  // side of every light-dark() colour in the styles.
  const scheme = s?.settings.color_scheme;
  useEffect(() => {
    const theme = scheme === 2 ? 'dark' : scheme === 3 ? 'light' : null;
    if (theme) document.documentElement.dataset.theme = theme;
    else delete document.documentElement.dataset.theme;
  }, [scheme]);

  if (!s) {
    return (
      <div class="loading" role="status">
        {bootError ? `Could not load: ${bootError}` : 'Loading…'}
      </div>
    );
  }

  const cur = currentView();
  return (
    <div class={`app${leftOpen ? ' left-open' : ''}${rightOpen ? ' right-open' : ''}`}>
      {/* Your own mentions stand out, as in Zulip; the server's HTML names the mentioned user by id. */}
      <style>{`.rendered-markdown .user-mention[data-user-id="${s.me.user_id}"]{background:var(--mention-me)}`}</style>
      <header class="topbar">
        <button class="icon-button phone-only" aria-label="Show channels and views" aria-expanded={leftOpen} onClick={() => setLeftOpen(!leftOpen)}>
          ☰
        </button>
        <a class="brand" href="#inbox">
          <Avatar url={s.realm.icon_url} name={s.realm.name} id={0} size={28} />
          <span class="brand-name">{s.realm.name}</span>
        </a>
        <SearchBox s={s} view={v} inputRef={search} />
        {s.connection === 'offline' && (
          <span class="offline" role="status">
            Reconnecting…
          </span>
        )}
        <button class="icon-button phone-only" aria-label="Show users" aria-expanded={rightOpen} onClick={() => setRightOpen(!rightOpen)}>
          <svg width="20" height="20" viewBox="0 0 24 24" aria-hidden="true" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round">
            <circle cx="9" cy="8" r="3.5" />
            <path d="M2.5 20c0-3.6 2.9-6 6.5-6s6.5 2.4 6.5 6" />
            <circle cx="17" cy="9" r="2.5" />
            <path d="M16 14.2c3 .1 5.5 2.1 5.5 5.3" />
          </svg>
        </button>
        <div class="menu">
          <button class="icon-button" aria-label="Menu" aria-haspopup="menu" aria-expanded={menuOpen} onClick={() => setMenuOpen(!menuOpen)}>
            <Avatar url={s.me.avatar_url} name={s.me.full_name} id={s.me.user_id} size={28} className="small" />
          </button>
          {menuOpen && (
            <div class="menu-popup" role="menu">
              <div class="menu-who">
                <strong>{s.me.full_name}</strong>
                <span>{s.me.email}</span>
              </div>
              <a role="menuitem" href="#settings/profile">
                Personal settings
              </a>
              <a role="menuitem" href="#channels/subscribed">
                Channel settings
              </a>
              {s.me.role <= 200 && (
                <a role="menuitem" href="#organization/organization-profile">
                  Organization settings
                </a>
              )}
              <button role="menuitem" onClick={() => { setMenuOpen(false); setShowShortcuts(true); }}>
                Keyboard shortcuts
              </button>
              <button role="menuitem" onClick={() => void logOut()}>
                Log out
              </button>
            </div>
          )}
        </div>
      </header>
      <LeftSidebar s={s} view={cur} />
      <main class="middle" aria-label="Messages">
        {cur.kind === 'inbox' && <Inbox s={s} />}
        {cur.kind === 'recent' && <Recent s={s} />}
        {cur.kind === 'drafts' && <Drafts s={s} compose={compose} />}
        {cur.kind === 'narrow' && <Feed s={s} compose={compose} />}
        <Compose ref={compose} s={s} view={cur} subs={s.subs} users={s.users} settings={s.settings} groups={s.userGroups} />
      </main>
      <RightSidebar s={s} users={s.users} presence={s.presence} />
      {(leftOpen || rightOpen) && <div class="scrim" onClick={() => { setLeftOpen(false); setRightOpen(false); }} />}
      {showShortcuts && <Shortcuts onClose={() => setShowShortcuts(false)} />}
      {settingsHash && <LazySettings s={s} hash={settingsHash} onClose={() => (window.location.hash = appHash.current)} />}
    </div>
  );
}

function SearchBox({ s, view, inputRef }: { s: State; view: View; inputRef: { current: HTMLInputElement | null } }) {
  const shown = view.kind === 'narrow' ? termsToSearch(view.terms, names(s)) : '';
  const [text, setText] = useState(shown);
  useEffect(() => setText(shown), [shown]);
  return (
    <form
      class="search"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        const terms = parseSearch(text, resolver(s));
        navigate({ kind: 'narrow', terms }, s);
        inputRef.current?.blur();
      }}
    >
      <SuggestInput id="search" type="search" label="Search" placeholder="Search" inputRef={inputRef} value={text} onInput={setText} suggestions={(v) => searchSuggestions(v, s)} />
    </form>
  );
}

/** Completes the operator being typed: channel and user names, and the `is:`/`has:` values. */
function searchSuggestions(text: string, s: State): string[] {
  const m = /(^|\s)(-?)([a-z-]+):(\S*)$/.exec(text);
  if (!m) return [];
  const head = text.slice(0, text.length - m[0].length + m[1]!.length) + m[2];
  const op = m[3]!;
  const partial = m[4]!.toLowerCase();
  let values: string[] = [];
  if (op === 'channel' || op === 'stream') values = [...s.subs.values()].map((x) => x.name);
  else if (op === 'sender' || op === 'dm') values = [...s.users.values()].filter((u) => u.is_active).map((u) => u.email);
  else if (op === 'is') values = ['starred', 'mentioned', 'unread', 'dm', 'resolved', 'followed'];
  else if (op === 'has') values = ['link', 'image', 'attachment', 'reaction'];
  return values
    .filter((v) => v.toLowerCase().includes(partial))
    .slice(0, 20)
    .map((v) => `${head}${op}:${/\s/.test(v) ? `"${v}"` : v} `);
}
