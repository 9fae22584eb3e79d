import { api, ApiError, NetworkError } from './client';
import type { ServerEvent } from './types';

/** What the web app tells the server it understands (POST /register's client_capabilities). */
const CAPABILITIES = {
  notification_settings_null: true,
  bulk_message_deletion: true,
  user_avatar_url_field_optional: false,
  stream_typing_notifications: true,
  user_settings_object: true,
  empty_topic_name: true,
  linkifier_url_template: true,
};

export function register(): Promise<Record<string, any>> {
  return api('POST', '/register', {
    apply_markdown: true,
    client_gravatar: false,
    slim_presence: true,
    include_subscribers: false,
    client_capabilities: CAPABILITIES,
  });
}

export interface EventLoopHandlers {
  queue(): { queueId: string; lastEventId: number } | null;
  onEvents(events: ServerEvent[]): void;
  /** The queue is gone (server restarted, or it expired): register again and reload what is shown. */
  onQueueLost(): Promise<void>;
  onConnection(state: 'connected' | 'offline'): void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One event queue per tab: long-polls GET /events, hands every batch to the one dispatcher,
 * and when the server cannot be reached retries with backoff (1 s doubling to 30 s, with jitter).
 */
export class EventLoop {
  private stopped = false;
  private abort: AbortController | null = null;

  constructor(private readonly h: EventLoopHandlers) {}

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }

  /** Cuts a wait short, e.g. when the browser says it is online again. */
  private wake: (() => void) | null = null;
  retryNow(): void {
    this.wake?.();
  }

  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  async run(): Promise<void> {
    let backoff = 1000;
    while (!this.stopped) {
      const q = this.h.queue();
      if (!q) return;
      this.abort = new AbortController();
      try {
        const r = await api('GET', '/events', { queue_id: q.queueId, last_event_id: q.lastEventId }, this.abort.signal);
        backoff = 1000;
        this.h.onConnection('connected');
        this.h.onEvents(r.events as ServerEvent[]);
      } catch (e) {
        if (this.stopped) return;
        if (e instanceof ApiError && e.code === 'BAD_EVENT_QUEUE_ID') {
          try {
            await this.h.onQueueLost();
            this.h.onConnection('connected');
            backoff = 1000;
          } catch (err) {
            if (!(err instanceof NetworkError) && !(err instanceof ApiError)) throw err;
            this.h.onConnection('offline');
            await this.wait(backoff + Math.random() * 500);
            backoff = Math.min(backoff * 2, 30000);
          }
          continue;
        }
        if (e instanceof ApiError && e.status === 401) return;
        if (e instanceof NetworkError || (e instanceof ApiError && (e.status >= 500 || e.status === 429))) {
          this.h.onConnection('offline');
          await this.wait(backoff + Math.random() * 500);
          backoff = Math.min(backoff * 2, 30000);
          continue;
        }
        // Anything else is a bug in a request we made; do not spin on it.
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 30000);
      }
    }
  }
}
