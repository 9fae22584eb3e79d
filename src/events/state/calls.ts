import { fetchExternalTokenCached } from '../../db/cached.js';
import { vidcallProvider } from '../../lib/video_calls/provider.js';
import type { StateFetcher } from './types.js';

/** POST /register `video_calls`: whether the user finished the OAuth flow, under both names. */
export const fetchCallsState: StateFetcher = async ({ services, user, want }) => {
  if (!want('video_calls')) return {};
  const provider = vidcallProvider(services.config);
  const hasToken = (await fetchExternalTokenCached(services.db.kysely, user.id, provider.tokenKey)) !== undefined;
  return { has_zoom_token: false, has_webex_token: hasToken, has_vidcall_token: hasToken };
};
