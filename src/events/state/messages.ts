import type { StateFetcher } from './types.js';

/** POST /register keys for: message, update_message_flags, user_topic, muted_topics, recent_private_conversations. */
export const fetchMessagesState: StateFetcher = async () => ({});
