import type { Config } from '../../config.js';

/**
 * The OAuth video-call provider our spec calls "vidcall": Zulip's Webex integration. Its
 * endpoints default to Webex's layout under VIDCALL_API_URL and can each be overridden, so a
 * compatible provider (or a test double) can be plugged in by configuration alone.
 */
export interface OAuthCallProvider {
  /** Shown in errors, as Zulip does ("Invalid Webex access token"). */
  name: string;
  /** Key of the stored token and of the register/event names (`has_webex_token`). */
  tokenKey: 'webex';
  clientId: string | null;
  clientSecret: string | null;
  authorizeUrl: string;
  tokenUrl: string;
  meetingsUrl: string;
  scope: string;
}

export function vidcallProvider(config: Config): OAuthCallProvider {
  const api = (config.vidcall.apiUrl ?? 'https://webexapis.com').replace(/\/+$/, '');
  return {
    name: 'Webex',
    tokenKey: 'webex',
    clientId: config.vidcall.clientId,
    clientSecret: config.vidcall.clientSecret,
    authorizeUrl: config.vidcall.authorizeUrl ?? `${api}/v1/authorize`,
    tokenUrl: config.vidcall.tokenUrl ?? `${api}/v1/access_token`,
    meetingsUrl: `${api}/v1/meetings`,
    scope: 'meeting:schedules_read meeting:schedules_write',
  };
}

/** The redirect URI registered with the provider; the same path Zulip uses. */
export const completePath = (provider: OAuthCallProvider): string => `/calls/${provider.tokenKey}/complete`;

/** What we keep of the provider's token response. */
export interface StoredToken {
  access_token: string;
  refresh_token?: string;
  /** Unix seconds; absent when the provider gave no lifetime. */
  expires_at?: number;
}
