import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Every setting, typed, with defaults that make the embedded mode (one process,
 * SQLite under ./data, in-memory queues) work with no configuration at all.
 */
export interface Config {
  databaseUrl: string;
  redisUrl: string | null;
  host: string;
  port: number;
  /** Absolute base URL clients reach us at; realm_uri and links are built from it. */
  externalUrl: string;
  dataDir: string;
  smtpUrl: string | null;
  emailFrom: string;
  ownerEmail: string | null;
  /** Who runs this server, named in notices to bot owners (Zulip's ZULIP_ADMINISTRATOR). */
  supportEmail: string;
  ownerPassword: string | null;
  realmName: string;
  logLevel: string;
  events: {
    /** Seconds a GET /events request is held before a heartbeat answers it. */
    heartbeatSeconds: number;
    /** Seconds a queue may go without a connected client before it is deleted. */
    queueTimeoutSeconds: number;
    /** Prefix of every Redis key and channel, so several deployments (or test runs) can share a Redis. */
    redisPrefix: string;
    /** Approximate number of published events the Redis log keeps for queues moving between processes. */
    redisLogLength: number;
  };
  invites: { defaultExpiresInMinutes: number; maxPerDay: number };
  rateLimits: {
    enabled: boolean;
    /** Zulip's api_by_user: requests per minute by one user. */
    apiPerMinute: number;
    /** Zulip's api_by_ip: unauthenticated requests per minute from one address. */
    ipPerMinute: number;
    /** Zulip's authenticate_by_username: password attempts per window for one username. */
    authAttempts: number;
    authWindowSeconds: number;
    redisPrefix: string;
  };
  bodyLimitBytes: number;
  /**
   * Peers whose X-Forwarded-For names the client (comma-separated addresses, CIDR ranges or
   * proxy-addr's names such as `loopback`). Anyone else could invent an address and dodge the
   * per-address rate limits.
   */
  trustedProxies: string;
  vidcall: {
    clientId: string | null;
    clientSecret: string | null;
    authorizeUrl: string | null;
    tokenUrl: string | null;
    apiUrl: string | null;
  };
  bigBlueButton: { url: string | null; secret: string | null };
  /** A Nextcloud server with Talk, and the account that creates the call conversations. */
  nextcloudTalk: { url: string | null; username: string | null; password: string | null };
  /** A Constructor Groups XAPI base URL and the API key that creates the call rooms. */
  constructorGroups: { url: string | null; accessKey: string | null; secretKey: string | null };
  jitsiServerUrl: string;
  /**
   * Scheduled messages and reminders: whether this process delivers them, and the longest it
   * sleeps between looks at the database (rows scheduled through this process wake it on time).
   */
  scheduler: { enabled: boolean; intervalMs: number };
  thumbnailer: { enabled: boolean; intervalMs: number };
  notifications: { enabled: boolean; intervalMs: number };
  /** Digest emails: whether this process sends them, and how often it looks whose digest day it is. */
  digests: { enabled: boolean; intervalMs: number };
  /**
   * Message retention (Zulip's archive_messages and clean_archived_data): whether this process
   * takes part, how often the cluster runs a pass (one process at a time), messages per archive
   * transaction for direct messages and for channels, and how many days archived messages stay
   * restorable before they and the uploads only they linked are deleted for good.
   */
  retention: { enabled: boolean; intervalMs: number; batchSize: number; channelBatchSize: number; archiveDays: number };
  /** Zulip's push notification service: its URL (null: not used) and this server's identity with it. */
  pushBouncer: { url: string | null; orgId: string | null; orgKey: string | null };
  /**
   * Direct delivery for an operator's own app build (when no bouncer is configured): Firebase
   * Cloud Messaging's HTTP v1 API with a service-account key file, and APNs with a token (.p8)
   * key. `tokenUri` (null: the key file's token_uri) and the URLs can point at other hosts.
   */
  fcm: { credentialsPath: string | null; tokenUri: string | null; url: string };
  apns: { keyFile: string | null; keyId: string | null; teamId: string | null; url: string; caFile: string | null };
  /**
   * The email gateway (Zulip's email mirror). `domain` is the part after the @ of channel and
   * notification-reply addresses (no domain: GET /streams/{id}/email_address answers "", as Zulip
   * does without EMAIL_GATEWAY_PATTERN); `port` is where this process accepts SMTP for them
   * (null: it does not listen; 0: any free port).
   */
  emailGateway: {
    domain: string | null;
    port: number | null;
    host: string;
    maxMessageBytes: number;
    /** How long a missed-message reply address (mm<token>@domain) accepts replies. */
    missedMessageAddressExpirySeconds: number;
  };
  /** Outgoing-webhook requests give up after this long (Zulip's OUTGOING_WEBHOOK_TIMEOUT_SECONDS). */
  outgoingWebhookTimeoutMs: number;
  /** The longest the outgoing-webhook worker sleeps between looks at its queue (a send through this process wakes it at once). */
  outgoingWebhookIntervalMs: number;
  /** Topic deletion works in batches of this many messages, newest first, within this time budget. */
  deleteTopic: { batchSize: number; timeBudgetMs: number };
  /** A directory service (Zulip's ZulipLDAPAuthBackend); null when PARLEY_LDAP_URL is unset. */
  ldap: LdapConfig | null;
  /** Zulip's JWT_AUTH_KEYS for POST /jwt/fetch_api_key: the shared key and accepted algorithms; null: off. */
  jwt: { key: string; algorithms: string[] } | null;
  /** OpenID Connect identity providers (Zulip's SOCIAL_AUTH_OIDC_ENABLED_IDPS), in button order; empty: off. */
  oidc: OidcProviderConfig[];
  /**
   * Zulip's TWO_FACTOR_AUTHENTICATION_ENABLED for browser password logins: `off`, `optional`
   * (people may enrol a TOTP app in their settings) or `required_for_admins` (also, owners and
   * administrators must enrol before their first browser session).
   */
  twoFactor: 'off' | 'optional' | 'required_for_admins';
  /** Zulip's PASSWORD_MIN_LENGTH and PASSWORD_MIN_GUESSES (zxcvbn's estimate of guesses needed). */
  passwords: { minLength: number; minGuesses: number };
  /** How long a password reset link works (Zulip: one day). */
  passwordResetExpiryMinutes: number;
  /**
   * GET /metrics in Prometheus' text format (docs/operations.md): off by default; on the main
   * port unless `port` is set (then on its own listener at `host`); behind `Authorization:
   * Bearer <token>` when a token is set.
   */
  metrics: { enabled: boolean; port: number | null; host: string; token: string | null };
}

/** One OpenID Connect provider: `key` names it in URLs and in external_authentication_methods (`oidc:<key>`). */
export interface OidcProviderConfig {
  key: string;
  /** The issuer; its /.well-known/openid-configuration is read at first use. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  displayName: string;
  /** URL of the button's icon, or null (Zulip's display_icon). */
  displayIcon: string | null;
}

/**
 * PARLEY_OIDC_PROVIDERS: a JSON object of key -> {oidc_url, client_id, secret, display_name,
 * display_icon}, the shape of Zulip's SOCIAL_AUTH_OIDC_ENABLED_IDPS, so a Zulip setting carries over.
 */
function oidcConfig(v: string | undefined): OidcProviderConfig[] {
  if (!v?.trim()) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    throw new Error('PARLEY_OIDC_PROVIDERS is not valid JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('PARLEY_OIDC_PROVIDERS must be a JSON object of provider name -> settings');
  return Object.entries(parsed as Record<string, Record<string, unknown>>).map(([key, idp]) => {
    if (!/^[a-z0-9_-]{1,40}$/.test(key)) throw new Error(`PARLEY_OIDC_PROVIDERS: provider name "${key}" must be 1-40 of a-z, 0-9, _ and -`);
    const str = (name: string, required: boolean): string | null => {
      const x = idp?.[name];
      if (typeof x === 'string' && x) return x;
      if (required) throw new Error(`PARLEY_OIDC_PROVIDERS["${key}"].${name} is required`);
      return null;
    };
    return {
      key,
      issuer: str('oidc_url', true)!,
      clientId: str('client_id', true)!,
      clientSecret: str('secret', true)!,
      displayName: str('display_name', false) ?? key,
      displayIcon: str('display_icon', false),
    };
  });
}

function twoFactorConfig(v: string | undefined): Config['twoFactor'] {
  const x = v?.trim() || 'optional';
  if (x !== 'off' && x !== 'optional' && x !== 'required_for_admins') throw new Error('PARLEY_TWO_FACTOR_AUTHENTICATION must be off, optional or required_for_admins');
  return x;
}

/**
 * How to reach the directory and read people from it. Templates use django-auth-ldap's
 * `%(user)s` (and `%(email)s`) placeholders, as Zulip's settings do, so a Zulip setup carries over.
 */
export interface LdapConfig {
  url: string;
  startTls: boolean;
  /** Verify the server's certificate on ldaps:// and StartTLS. */
  tlsVerify: boolean;
  /** Empty bind DN: anonymous searches. */
  bindDn: string;
  bindPassword: string;
  /** Where and how people are searched: base DN and a filter with %(user)s. */
  userSearchBase: string | null;
  userSearchFilter: string;
  /** Alternative to the search: the DN of a person, with %(user)s. */
  userDnTemplate: string | null;
  /** Zulip's LDAP_APPEND_DOMAIN: directory usernames are the part before @ of emails in this domain. */
  appendDomain: string | null;
  /** Zulip's LDAP_EMAIL_ATTR: the attribute holding a person's email (also used to find them by email). */
  emailAttr: string | null;
  /** Zulip's AUTH_LDAP_USERNAME_ATTR: the attribute that is the directory username. */
  usernameAttr: string;
  /** Zulip's AUTH_LDAP_USER_ATTR_MAP: full_name, first_name, last_name, avatar, deactivated, userAccountControl, custom_profile_field__<name>. */
  attrMap: Record<string, string>;
  /** Zulip's LDAP_DEACTIVATE_NON_MATCHING_USERS: sync deactivates accounts the directory no longer has. */
  deactivateNonMatching: boolean;
  /** Minutes between automatic syncs in the server (0: only `npx parley sync-ldap`). */
  syncIntervalMinutes: number;
  timeoutMs: number;
}

/** `key=value,key=value` (Zulip's AUTH_LDAP_USER_ATTR_MAP written on one line). */
function attrMap(v: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (v ?? 'full_name=cn').split(',')) {
    const [k, a] = part.split('=').map((x) => x.trim());
    if (!k || !a) throw new Error(`Invalid PARLEY_LDAP_USER_ATTR_MAP entry: ${part}`);
    out[k] = a;
  }
  return out;
}

function ldapConfig(e: Record<string, string | undefined>): LdapConfig | null {
  if (!e.PARLEY_LDAP_URL) return null;
  return {
    url: e.PARLEY_LDAP_URL,
    startTls: e.PARLEY_LDAP_START_TLS === 'on',
    tlsVerify: (e.PARLEY_LDAP_TLS_VERIFY ?? 'on') !== 'off',
    bindDn: e.PARLEY_LDAP_BIND_DN ?? '',
    bindPassword: e.PARLEY_LDAP_BIND_PASSWORD ?? '',
    userSearchBase: e.PARLEY_LDAP_USER_SEARCH_BASE || null,
    userSearchFilter: e.PARLEY_LDAP_USER_SEARCH_FILTER || '(uid=%(user)s)',
    userDnTemplate: e.PARLEY_LDAP_USER_DN_TEMPLATE || null,
    appendDomain: e.PARLEY_LDAP_APPEND_DOMAIN?.toLowerCase() || null,
    emailAttr: e.PARLEY_LDAP_EMAIL_ATTR || null,
    usernameAttr: e.PARLEY_LDAP_USERNAME_ATTR || 'uid',
    attrMap: attrMap(e.PARLEY_LDAP_USER_ATTR_MAP),
    deactivateNonMatching: e.PARLEY_LDAP_DEACTIVATE_NON_MATCHING === 'on',
    syncIntervalMinutes: int(e.PARLEY_LDAP_SYNC_INTERVAL_MINUTES, 0),
    timeoutMs: int(e.PARLEY_LDAP_TIMEOUT_MS, 5000),
  };
}

/** Reads KEY=VALUE lines from a .env file; real environment variables win. */
function readDotEnv(path: string): Record<string, string> {
  if (!existsSync(path)) return {};
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split(/\r?\n/)) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m || line.trimStart().startsWith('#')) continue;
    out[m[1]!] = m[2]!.replace(/^(['"])(.*)\1$/, '$2');
  }
  return out;
}

function int(v: string | undefined, fallback: number): number {
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`Invalid numeric setting: ${v}`);
  return n;
}

/** The address in "Name <address>" (or the whole value). */
function addressOf(from: string): string {
  return /<([^>]*)>/.exec(from)?.[1]?.trim() || from.trim();
}

export function loadConfig(overrides: Partial<Config> = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const e = { ...readDotEnv(resolve(env.PARLEY_ENV_FILE ?? '.env')), ...env } as Record<string, string | undefined>;
  const dataDir = resolve(e.PARLEY_DATA_DIR ?? 'data');
  const port = int(e.PORT, 9991);
  const host = e.HOST ?? '0.0.0.0';
  const config: Config = {
    databaseUrl: e.DATABASE_URL ?? `sqlite:${resolve(dataDir, 'parley.sqlite3')}`,
    redisUrl: e.REDIS_URL || null,
    host,
    port,
    externalUrl: (e.EXTERNAL_URL ?? `http://localhost:${port}`).replace(/\/+$/, ''),
    dataDir,
    smtpUrl: e.SMTP_URL || null,
    emailFrom: e.EMAIL_FROM ?? 'Parley <noreply@localhost>',
    ownerEmail: e.PARLEY_OWNER_EMAIL || null,
    supportEmail: e.PARLEY_SUPPORT_EMAIL || e.PARLEY_OWNER_EMAIL || addressOf(e.EMAIL_FROM ?? 'Parley <noreply@localhost>'),
    ownerPassword: e.PARLEY_OWNER_PASSWORD || null,
    realmName: e.PARLEY_REALM_NAME ?? 'Parley',
    logLevel: e.LOG_LEVEL ?? 'info',
    events: {
      heartbeatSeconds: int(e.PARLEY_HEARTBEAT_SECONDS, 50),
      queueTimeoutSeconds: int(e.PARLEY_QUEUE_TIMEOUT_SECONDS, 600),
      redisPrefix: e.PARLEY_REDIS_PREFIX ?? 'parley:',
      redisLogLength: int(e.PARLEY_REDIS_LOG_LENGTH, 100_000),
    },
    invites: {
      defaultExpiresInMinutes: int(e.PARLEY_INVITE_EXPIRES_MINUTES, 14400),
      maxPerDay: int(e.PARLEY_MAX_INVITES_PER_DAY, 100),
    },
    rateLimits: {
      enabled: (e.PARLEY_RATE_LIMITS ?? 'on') !== 'off',
      apiPerMinute: int(e.PARLEY_RATE_LIMIT_API_PER_MINUTE, 200),
      ipPerMinute: int(e.PARLEY_RATE_LIMIT_IP_PER_MINUTE, 100),
      authAttempts: int(e.PARLEY_RATE_LIMIT_AUTH_ATTEMPTS, 5),
      authWindowSeconds: int(e.PARLEY_RATE_LIMIT_AUTH_WINDOW_SECONDS, 1800),
      redisPrefix: `${e.PARLEY_REDIS_PREFIX ?? 'parley:'}ratelimit:`,
    },
    bodyLimitBytes: int(e.PARLEY_BODY_LIMIT_BYTES, 26 * 1024 * 1024),
    trustedProxies: e.PARLEY_TRUSTED_PROXIES ?? 'loopback',
    vidcall: {
      clientId: e.VIDCALL_CLIENT_ID || null,
      clientSecret: e.VIDCALL_CLIENT_SECRET || null,
      authorizeUrl: e.VIDCALL_AUTHORIZE_URL || null,
      tokenUrl: e.VIDCALL_TOKEN_URL || null,
      apiUrl: e.VIDCALL_API_URL || null,
    },
    bigBlueButton: { url: e.BIG_BLUE_BUTTON_URL || null, secret: e.BIG_BLUE_BUTTON_SECRET || null },
    nextcloudTalk: {
      url: e.NEXTCLOUD_TALK_URL ? e.NEXTCLOUD_TALK_URL.replace(/\/+$/, '') : null,
      username: e.NEXTCLOUD_TALK_USERNAME || null,
      password: e.NEXTCLOUD_TALK_PASSWORD || null,
    },
    constructorGroups: {
      url: e.CONSTRUCTOR_GROUPS_URL ? e.CONSTRUCTOR_GROUPS_URL.replace(/\/+$/, '') : null,
      accessKey: e.CONSTRUCTOR_GROUPS_ACCESS_KEY || null,
      secretKey: e.CONSTRUCTOR_GROUPS_SECRET_KEY || null,
    },
    jitsiServerUrl: (e.JITSI_SERVER_URL ?? 'https://meet.jit.si').replace(/\/+$/, ''),
    scheduler: {
      enabled: (e.PARLEY_SCHEDULER ?? 'on') !== 'off',
      intervalMs: int(e.PARLEY_SCHEDULER_INTERVAL_MS, 10_000),
    },
    thumbnailer: {
      enabled: (e.PARLEY_THUMBNAILER ?? 'on') !== 'off',
      intervalMs: int(e.PARLEY_THUMBNAILER_INTERVAL_MS, 10_000),
    },
    pushBouncer: {
      url: e.PUSH_NOTIFICATION_BOUNCER_URL?.trim().replace(/\/+$/, '') || null,
      orgId: e.ZULIP_ORG_ID?.trim() || null,
      orgKey: e.ZULIP_ORG_KEY?.trim() || null,
    },
    fcm: {
      credentialsPath: e.ANDROID_FCM_CREDENTIALS_PATH?.trim() || null,
      tokenUri: e.PARLEY_FCM_TOKEN_URI?.trim() || null,
      url: (e.PARLEY_FCM_URL?.trim() || 'https://fcm.googleapis.com').replace(/\/+$/, ''),
    },
    apns: {
      keyFile: e.APNS_TOKEN_KEY_FILE?.trim() || null,
      keyId: e.APNS_TOKEN_KEY_ID?.trim() || null,
      teamId: e.APNS_TEAM_ID?.trim() || null,
      url: (e.PARLEY_APNS_URL?.trim() || (e.APNS_SANDBOX === 'true' ? 'https://api.sandbox.push.apple.com' : 'https://api.push.apple.com')).replace(/\/+$/, ''),
      caFile: e.PARLEY_APNS_CA_FILE?.trim() || null,
    },
    notifications: {
      enabled: (e.PARLEY_NOTIFICATIONS ?? 'on') !== 'off',
      intervalMs: int(e.PARLEY_NOTIFICATIONS_INTERVAL_MS, 10_000),
    },
    digests: {
      enabled: (e.PARLEY_DIGESTS ?? 'on') !== 'off',
      intervalMs: int(e.PARLEY_DIGESTS_INTERVAL_MS, 3_600_000),
    },
    retention: {
      enabled: (e.PARLEY_RETENTION ?? 'on') !== 'off',
      intervalMs: int(e.PARLEY_RETENTION_INTERVAL_MS, 3_600_000),
      batchSize: Math.max(1, int(e.PARLEY_RETENTION_BATCH_SIZE, 1000)),
      channelBatchSize: Math.max(1, int(e.PARLEY_RETENTION_CHANNEL_BATCH_SIZE, 100)),
      archiveDays: int(e.PARLEY_ARCHIVED_DATA_DAYS, 30),
    },
    emailGateway: {
      domain: e.PARLEY_EMAIL_GATEWAY_DOMAIN?.trim().toLowerCase() || null,
      port: e.PARLEY_EMAIL_GATEWAY_PORT ? int(e.PARLEY_EMAIL_GATEWAY_PORT, 0) : null,
      host: e.PARLEY_EMAIL_GATEWAY_HOST ?? host,
      maxMessageBytes: int(e.PARLEY_EMAIL_GATEWAY_MAX_BYTES, 25 * 1024 * 1024),
      missedMessageAddressExpirySeconds: int(e.PARLEY_EMAIL_GATEWAY_REPLY_EXPIRY_SECONDS, 5 * 24 * 3600),
    },
    outgoingWebhookTimeoutMs: int(e.PARLEY_OUTGOING_WEBHOOK_TIMEOUT_MS, 10_000),
    outgoingWebhookIntervalMs: int(e.PARLEY_OUTGOING_WEBHOOK_INTERVAL_MS, 10_000),
    deleteTopic: {
      batchSize: int(e.PARLEY_DELETE_TOPIC_BATCH_SIZE, 100),
      timeBudgetMs: int(e.PARLEY_DELETE_TOPIC_TIME_BUDGET_MS, 50_000),
    },
    ldap: ldapConfig(e),
    passwords: { minLength: int(e.PARLEY_PASSWORD_MIN_LENGTH, 6), minGuesses: int(e.PARLEY_PASSWORD_MIN_GUESSES, 10000) },
    passwordResetExpiryMinutes: int(e.PARLEY_PASSWORD_RESET_EXPIRY_MINUTES, 1440),
    jwt: e.PARLEY_JWT_KEY
      ? { key: e.PARLEY_JWT_KEY, algorithms: (e.PARLEY_JWT_ALGORITHMS ?? 'HS256').split(',').map((a) => a.trim()).filter(Boolean) }
      : null,
    oidc: oidcConfig(e.PARLEY_OIDC_PROVIDERS),
    twoFactor: twoFactorConfig(e.PARLEY_TWO_FACTOR_AUTHENTICATION),
    metrics: {
      enabled: (e.PARLEY_METRICS ?? 'off') === 'on',
      port: e.PARLEY_METRICS_PORT ? int(e.PARLEY_METRICS_PORT, 0) : null,
      host: e.PARLEY_METRICS_HOST ?? '127.0.0.1',
      token: e.PARLEY_METRICS_TOKEN || null,
    },
    ...overrides,
  };
  return config;
}
