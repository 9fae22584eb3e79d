// Zulip's mention and channel-link syntax, shared by the block quote processor (which silences
// quoted mentions), the inline patterns and the pre-scan that tells callers what to look up.

/** Mentions and channel links start at the beginning, after whitespace, or after ' " ( { [ / <. */
export const BEFORE_MENTION = String.raw`(?<![^\s'"({\[/<])`;

/** `@**Full Name**`, `@**Full Name|12**`, `@**|12**`, `@_**...**` (silent). */
export const MENTIONS_SOURCE = String.raw`${BEFORE_MENTION}@(?<silent>_?)(\*\*(?<match>[^*]+)\*\*)`;

/** `@*group name*`, `@_*group name*` (silent). */
export const GROUP_MENTIONS_SOURCE = String.raw`${BEFORE_MENTION}@(?<silent>_?)(\*(?<match>[^*]+)\*)`;

export const CHANNEL_SOURCE = String.raw`${BEFORE_MENTION}#\*\*(?<stream_name>[^*]+)\*\*`;
export const CHANNEL_TOPIC_SOURCE = String.raw`${BEFORE_MENTION}#\*\*(?<stream_name>[^*>]+)>(?<topic_name>[^*]+)\*\*`;
export const CHANNEL_TOPIC_MESSAGE_SOURCE = String.raw`${BEFORE_MENTION}#\*\*(?<stream_name>[^*>]+)>(?<topic_name>[^*]+)@(?<message_id>\d+)\*\*`;

export const STREAM_WILDCARDS: ReadonlySet<string> = new Set(['all', 'everyone', 'stream', 'channel']);
export const TOPIC_WILDCARDS: ReadonlySet<string> = new Set(['topic']);

/** `name|123` or `|123` inside a user mention. */
export const MENTION_ID_RE = /^(?<full_name>.+)?\|(?<user_id>\d+)(?=\n?$)/u;
