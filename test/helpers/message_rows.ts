import type { SentMessageRow } from '../../src/db/repos/messages.js';

/** A channel message as a send writes it (realm 1, sender 1, channel 1), for tests that insert rows directly. */
export function channelMessageRow(content: string, topic = 't'): SentMessageRow {
  return {
    realm_id: 1,
    sender_id: 1,
    type: 'stream',
    stream_id: 1,
    topic,
    topic_lc: topic.toLowerCase(),
    dm_key: null,
    content,
    rendered_content: '<p>m</p>',
    date_sent: 0,
    sending_client: 'test',
    has_link: 0,
    has_image: 0,
    has_attachment: 0,
  };
}
