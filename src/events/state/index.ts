import type { StateFetcher } from './types.js';
import { fetchUsersState } from './users.js';
import { fetchStreamsState } from './streams.js';
import { fetchSettingsState } from './settings.js';
import { fetchMessagesState } from './messages.js';
import { fetchOrgState } from './org.js';
import { fetchGroupsState } from './groups.js';
import { fetchInvitesState } from './invites.js';
import { fetchCallsState } from './calls.js';
import { fetchDevicesState } from './devices.js';
import { fetchPresenceState } from './presence.js';
import { fetchEmojiState } from './emoji.js';
import { fetchPersonalState } from './personal.js';
import { fetchScheduledMessagesState } from './scheduled_messages.js';
import { fetchChannelFoldersState } from './channel_folders.js';
import { fetchBotsState } from './bots.js';

/** Every area's contribution to POST /register, merged in this order. */
export const STATE_FETCHERS: readonly StateFetcher[] = [
  fetchSettingsState,
  fetchUsersState,
  fetchGroupsState,
  fetchStreamsState,
  fetchMessagesState,
  fetchOrgState,
  fetchInvitesState,
  fetchCallsState,
  fetchDevicesState,
  fetchPresenceState,
  fetchEmojiState,
  fetchPersonalState,
  fetchScheduledMessagesState,
  fetchChannelFoldersState,
  fetchBotsState,
];
