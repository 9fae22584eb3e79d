import type { ServerEvent, User } from '../api/types';
import type { State } from '../state/store';

/** A left-sidebar view as the person configured it (register's navigation_views). */
export interface NavigationView {
  fragment: string;
  is_pinned: boolean;
  name: string | null;
}

/**
 * The views the app builds in, by fragment (the address after `#`), as the sidebar lists them
 * (Zulip's BUILT_IN_VIEW_FRAGMENTS, less the reactions view the app does not have).
 */
export const BUILT_IN_VIEWS: [string, string][] = [
  ['inbox', 'Inbox'],
  ['recent', 'Recent conversations'],
  ['feed', 'Combined feed'],
  ['narrow/is/starred', 'Starred'],
  ['narrow/is/mentioned', 'Mentions'],
  ['drafts', 'Drafts'],
];

/**
 * The sidebar's views: the built-in ones the person has not unpinned, then their own pinned
 * views. A built-in view without a navigation_views entry is pinned.
 */
export function sidebarViews(views: NavigationView[] | undefined): { fragment: string; name: string }[] {
  const byFragment = new Map((views ?? []).map((v) => [v.fragment, v]));
  const builtIn = BUILT_IN_VIEWS.filter(([f]) => byFragment.get(f)?.is_pinned !== false).map(([fragment, name]) => ({ fragment, name }));
  const custom = (views ?? []).filter((v) => v.is_pinned && v.name !== null && !BUILT_IN_VIEWS.some(([f]) => f === v.fragment));
  return [...builtIn, ...custom.map((v) => ({ fragment: v.fragment, name: v.name! }))];
}

/**
 * Keeps register's answer (`state.reg`) current for what the settings screens read: the
 * organization's settings and permission groups, the person's own settings, and the
 * organization's lists (linkifiers, profile fields, domains, …). Called by applyEvents for every
 * event, after the core's applyEvent; it counts events by type so that a screen showing a list it
 * fetched (users, channels, invitations) fetches it again when something of that type changed.
 */
export function applySettingsEvent(state: State, e: ServerEvent): void {
  state.eventCounts = { ...state.eventCounts, [e.type]: (state.eventCounts[e.type] ?? 0) + 1 };
  const reg = state.reg;
  switch (e.type) {
    case 'realm_user': {
      // One's own confirmed email change: register's delivery_email, which Account & privacy shows.
      if (e.op === 'update' && e.person?.user_id === state.me.user_id && e.person.delivery_email !== undefined) reg.delivery_email = e.person.delivery_email;
      // A custom profile field's new value: kept in the person's profile_data, as register gives it.
      const f = e.op === 'update' ? e.person?.custom_profile_field : undefined;
      const u = f ? (state.users.get(e.person.user_id) as (User & { profile_data?: Record<string, unknown> }) | undefined) : undefined;
      if (!f || !u) return;
      const profile = { ...u.profile_data };
      if (f.value === null || f.value === undefined) delete profile[f.id];
      else profile[f.id] = { value: f.value, rendered_value: f.rendered_value };
      state.users.set(u.user_id, { ...u, profile_data: profile } as User);
      return;
    }
    case 'realm':
      if (e.op === 'update') reg[`realm_${e.property}`] = e.value;
      else if (e.op === 'update_dict') for (const [k, v] of Object.entries(e.data ?? {})) reg[`realm_${k}`] = v;
      if (e.op === 'update_dict' && e.property === 'icon') state.realm.icon_url = e.data.icon_url;
      return;
    case 'user_settings':
      if (e.op === 'update') reg.user_settings = { ...reg.user_settings, [e.property]: e.value };
      return;
    case 'realm_user_settings_defaults':
      if (e.op === 'update') reg.realm_user_settings_defaults = { ...reg.realm_user_settings_defaults, [e.property]: e.value };
      return;
    case 'user_group': {
      const groups: any[] = reg.realm_user_groups ?? [];
      const change = (id: number, f: (g: any) => any) => {
        reg.realm_user_groups = groups.map((g) => (g.id === id ? f(g) : g));
      };
      const without = (xs: number[], ids: number[]) => xs.filter((x) => !ids.includes(x));
      if (e.op === 'add') reg.realm_user_groups = [...groups, e.group];
      else if (e.op === 'update') change(e.group_id, (g) => ({ ...g, ...e.data }));
      else if (e.op === 'remove') reg.realm_user_groups = groups.filter((g) => g.id !== e.group_id);
      else if (e.op === 'add_members') change(e.group_id, (g) => ({ ...g, members: [...new Set([...g.members, ...e.user_ids])] }));
      else if (e.op === 'remove_members') change(e.group_id, (g) => ({ ...g, members: without(g.members, e.user_ids) }));
      else if (e.op === 'add_subgroups') change(e.group_id, (g) => ({ ...g, direct_subgroup_ids: [...new Set([...g.direct_subgroup_ids, ...e.direct_subgroup_ids])] }));
      else if (e.op === 'remove_subgroups') change(e.group_id, (g) => ({ ...g, direct_subgroup_ids: without(g.direct_subgroup_ids, e.direct_subgroup_ids) }));
      return;
    }
    case 'realm_linkifiers':
      reg.realm_linkifiers = e.realm_linkifiers;
      return;
    case 'realm_playgrounds':
      reg.realm_playgrounds = e.realm_playgrounds;
      return;
    case 'realm_emoji':
      if (e.op === 'update') reg.realm_emoji = e.realm_emoji;
      return;
    case 'custom_profile_fields':
      reg.custom_profile_fields = e.fields;
      return;
    case 'default_streams':
      reg.realm_default_streams = e.default_streams;
      return;
    case 'muted_users':
      reg.muted_users = e.muted_users;
      return;
    case 'alert_words':
      reg.alert_words = e.alert_words;
      return;
    case 'realm_domains': {
      const domains: any[] = reg.realm_domains ?? [];
      if (e.op === 'add') reg.realm_domains = [...domains, e.realm_domain];
      else if (e.op === 'change') reg.realm_domains = domains.map((d) => (d.domain === e.realm_domain.domain ? e.realm_domain : d));
      else if (e.op === 'remove') reg.realm_domains = domains.filter((d) => d.domain !== e.domain);
      return;
    }
    case 'saved_snippets': {
      const list: any[] = reg.saved_snippets ?? [];
      if (e.op === 'add') reg.saved_snippets = [...list, e.saved_snippet];
      else if (e.op === 'update') reg.saved_snippets = list.map((x) => (x.id === e.saved_snippet.id ? e.saved_snippet : x));
      else if (e.op === 'remove') reg.saved_snippets = list.filter((x) => x.id !== e.saved_snippet_id);
      return;
    }
    case 'realm_bot': {
      const bots: { user_id: number }[] = reg.realm_bots ?? [];
      if (e.op === 'add') reg.realm_bots = [...bots, e.bot];
      else if (e.op === 'update') reg.realm_bots = bots.map((b) => (b.user_id === e.bot.user_id ? { ...b, ...e.bot } : b));
      else if (e.op === 'delete') reg.realm_bots = bots.filter((b) => b.user_id !== e.bot.user_id);
      return;
    }
    case 'navigation_view': {
      const views: NavigationView[] = reg.navigation_views ?? [];
      if (e.op === 'add') reg.navigation_views = [...views, e.navigation_view];
      else if (e.op === 'update') reg.navigation_views = views.map((v) => (v.fragment === e.fragment ? { ...v, ...e.data } : v));
      else if (e.op === 'remove') reg.navigation_views = views.filter((v) => v.fragment !== e.fragment);
      return;
    }
    case 'user_status': {
      const { type: _t, id: _i, user_id, ...status } = e;
      reg.user_status = { ...reg.user_status, [user_id]: { ...reg.user_status?.[user_id], ...status } };
      return;
    }
    default:
      return;
  }
}
