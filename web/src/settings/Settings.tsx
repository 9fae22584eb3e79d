import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { State } from '../state/store';
import { isAdmin, isGuest, NotAllowed } from './common';
import { Account, AlertWords, DefaultUserSettings, MutedUsers, NavigationViews, Notifications, Preferences, Profile, SavedSnippets, Topics } from './Personal';
import { Channels } from './Channels';
import { Invitations, OrganizationPermissions, OrganizationProfile, OrganizationSettings, Users } from './Organization';
import { Bots, CustomEmoji, DataExports, Linkifiers, Playgrounds, ProfileFields } from './Extras';
import { Groups } from './Groups';
import './settings.css';

interface Screen {
  /** The address after `#`, as Zulip names it. */
  hash: string;
  title: string;
  render: (s: State, path: string[]) => ComponentChildren;
  /** Administrators only: anyone else is told why instead. */
  admin?: boolean;
}

const PERSONAL: Screen[] = [
  { hash: 'settings/profile', title: 'Profile', render: (s) => <Profile s={s} /> },
  { hash: 'settings/account-and-privacy', title: 'Account & privacy', render: (s) => <Account s={s} /> },
  { hash: 'settings/preferences', title: 'Preferences', render: (s) => <Preferences s={s} /> },
  { hash: 'settings/notifications', title: 'Notifications', render: (s) => <Notifications s={s} /> },
  { hash: 'settings/your-bots', title: 'Bots', render: (s) => <Bots s={s} mine /> },
  { hash: 'settings/alert-words', title: 'Alert words', render: (s) => <AlertWords s={s} /> },
  { hash: 'settings/muted-users', title: 'Muted users', render: (s) => <MutedUsers s={s} /> },
  { hash: 'settings/topics', title: 'Topics', render: (s) => <Topics s={s} /> },
  { hash: 'settings/saved-snippets', title: 'Saved snippets', render: (s) => <SavedSnippets s={s} /> },
  { hash: 'settings/navigation-views', title: 'Navigation views', render: (s) => <NavigationViews s={s} /> },
];

const ORGANIZATION: Screen[] = [
  { hash: 'organization/organization-profile', title: 'Organization profile', render: (s) => <OrganizationProfile s={s} />, admin: true },
  { hash: 'organization/organization-settings', title: 'Organization settings', render: (s) => <OrganizationSettings s={s} />, admin: true },
  { hash: 'organization/default-user-settings', title: 'Default user settings', render: (s) => <DefaultUserSettings s={s} />, admin: true },
  { hash: 'organization/organization-permissions', title: 'Organization permissions', render: (s) => <OrganizationPermissions s={s} />, admin: true },
  { hash: 'organization/users', title: 'Users', render: (s) => <Users s={s} />, admin: true },
  { hash: 'organization/bots', title: 'Bots', render: (s) => <Bots s={s} />, admin: true },
  { hash: 'organization/invites-list', title: 'Invitations', render: (s) => <Invitations s={s} /> },
  { hash: 'organization/emoji-settings', title: 'Custom emoji', render: (s) => <CustomEmoji s={s} /> },
  { hash: 'organization/linkifier-settings', title: 'Linkifiers', render: (s) => <Linkifiers s={s} /> },
  { hash: 'organization/playground-settings', title: 'Code playgrounds', render: (s) => <Playgrounds s={s} /> },
  { hash: 'organization/profile-field-settings', title: 'Custom profile fields', render: (s) => <ProfileFields s={s} /> },
  { hash: 'organization/data-exports-admin', title: 'Data exports', render: (s) => <DataExports s={s} />, admin: true },
];

/** Zulip's older and alternative addresses for the same screens. */
const ALIASES: Record<string, string> = {
  settings: 'settings/profile',
  'settings/your-account': 'settings/account-and-privacy',
  'settings/display-settings': 'settings/preferences',
  organization: 'organization/organization-profile',
  'organization/deactivated-users-admin': 'organization/users',
  'organization/user-list-admin': 'organization/users',
  'organization/bot-list-admin': 'organization/bots',
  'organization/default-channels-list': 'organization/organization-settings',
  'organization/auth-methods': 'organization/organization-settings',
  'organization/user-groups-admin': 'groups/all',
  streams: 'channels/subscribed',
  channels: 'channels/subscribed',
  groups: 'groups/your',
};

const ADMIN_REASON = 'Only organization administrators can see and change these settings. Ask an administrator of this organization if something here needs changing.';

/** The settings overlay: personal settings, the organization, channels and groups, by address. */
export function Settings({ s, hash, onClose }: { s: State; hash: string; onClose: () => void }) {
  let key = hash.replace(/^#/, '');
  key = ALIASES[key] ?? key;
  const parts = key.split('/');
  const area = parts[0] === 'streams' ? 'channels' : parts[0]!;
  const dialog = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);
  useEffect(() => {
    dialog.current?.querySelector<HTMLElement>('.settings-content h2')?.focus();
  }, [key]);
  // A modal dialog: the app behind it is out of reach of the keyboard and screen readers.
  useEffect(() => {
    const overlay = dialog.current;
    const behind = [...(overlay?.parentElement?.children ?? [])].filter((el): el is HTMLElement => el !== overlay && el instanceof HTMLElement && !el.inert);
    for (const el of behind) el.inert = true;
    return () => {
      for (const el of behind) el.inert = false;
    };
  }, []);

  let content: ComponentChildren;
  if (area === 'channels') content = <Channels s={s} path={parts.slice(1)} />;
  else if (area === 'groups') content = <Groups s={s} path={parts.slice(1)} />;
  else {
    const screen = [...PERSONAL, ...ORGANIZATION].find((x) => x.hash === key) ?? (area === 'organization' ? ORGANIZATION[0]! : PERSONAL[0]!);
    content = screen.admin && !isAdmin(s) ? <NotAllowed title={screen.title} reason={ADMIN_REASON} /> : screen.render(s, parts.slice(2));
  }
  const link = (x: Screen) => (
    <li>
      <a href={`#${x.hash}`} aria-current={x.hash === key ? 'page' : undefined}>
        {x.title}
      </a>
    </li>
  );
  return (
    <div class="settings-overlay" role="dialog" aria-modal="true" aria-label="Settings" ref={dialog}>
      <div class="settings-panel">
        <nav class="settings-nav" aria-label="Settings sections">
          <div class="settings-nav-title">Personal settings</div>
          <ul class="plain">{PERSONAL.map(link)}</ul>
          <div class="settings-nav-title">Channels and groups</div>
          <ul class="plain">
            <li>
              <a href="#channels/subscribed" aria-current={area === 'channels' ? 'page' : undefined}>
                Channels
              </a>
            </li>
            {!isGuest(s) && (
              <li>
                <a href="#groups/your" aria-current={area === 'groups' ? 'page' : undefined}>
                  User groups
                </a>
              </li>
            )}
          </ul>
          <div class="settings-nav-title">Organization</div>
          <ul class="plain">{ORGANIZATION.filter((x) => !x.admin || isAdmin(s)).map(link)}</ul>
        </nav>
        <div class="settings-content">{content}</div>
        <button class="icon-button settings-close" aria-label="Close settings" onClick={onClose}>
          ✕
        </button>
      </div>
    </div>
  );
}
