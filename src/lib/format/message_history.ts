import type { Message } from '../../db/tables.js';
import type { EditHistoryEntry } from './messages.js';

/** One snapshot of GET /messages/{id}/history: the message as it was right after an edit. */
export interface HistorySnapshot {
  topic: string;
  content: string;
  rendered_content: string;
  timestamp: number;
  user_id: number | null;
  prev_topic?: string;
  prev_content?: string;
  prev_rendered_content?: string;
  stream?: number;
  prev_stream?: number;
}

/**
 * Zulip's fill_edit_history_entries: the stored entries hold values from before each edit,
 * newest first; walking them from the current message back rebuilds every snapshot, then the
 * original message. Returned oldest first. With the "moves" visibility policy only moves are
 * shown, without any earlier content. (`content_html_diff` is not produced.)
 */
export function formatMessageHistory(
  message: Pick<Message, 'type' | 'topic' | 'content' | 'rendered_content' | 'date_sent' | 'sender_id' | 'edit_history'>,
  opts: { visibility: 'all' | 'moves'; emptyTopicDisplayName: string | null },
): HistorySnapshot[] {
  const shownTopic = (t: string): string => (message.type === 'stream' && t === '' && opts.emptyTopicDisplayName !== null ? opts.emptyTopicDisplayName : t);
  let entries: EditHistoryEntry[] = [];
  try {
    entries = message.edit_history ? (JSON.parse(message.edit_history) as EditHistoryEntry[]) : [];
  } catch {
    entries = [];
  }
  let topic = message.topic;
  let content = message.content;
  let rendered = message.rendered_content;
  const out: HistorySnapshot[] = [];
  for (const e of entries) {
    const isMove = e.prev_topic !== undefined || e.prev_stream !== undefined;
    const snapshot: HistorySnapshot = { topic: shownTopic(topic), content, rendered_content: rendered, timestamp: e.timestamp, user_id: e.user_id };
    if (e.prev_topic !== undefined) {
      snapshot.prev_topic = shownTopic(e.prev_topic);
      topic = e.prev_topic;
    }
    if (e.prev_stream !== undefined) {
      snapshot.prev_stream = e.prev_stream;
      if (e.stream !== undefined) snapshot.stream = e.stream;
    }
    if (e.prev_content !== undefined) {
      snapshot.prev_content = e.prev_content;
      snapshot.prev_rendered_content = e.prev_rendered_content ?? '';
      content = e.prev_content;
      rendered = e.prev_rendered_content ?? '';
    }
    if (opts.visibility === 'all' || isMove) out.push(snapshot);
  }
  out.push({ topic: shownTopic(topic), content, rendered_content: rendered, timestamp: message.date_sent, user_id: message.sender_id });
  if (opts.visibility === 'moves') {
    // Earlier content stays hidden: every snapshot shows the current text.
    for (const s of out) {
      s.content = message.content;
      s.rendered_content = message.rendered_content;
      delete s.prev_content;
      delete s.prev_rendered_content;
    }
  }
  return out.reverse();
}
