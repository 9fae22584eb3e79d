import { doEnsureThumbnails } from '../actions/thumbnails.js';
import { now } from '../db/index.js';
import { fetchClaimableImageAttachmentIds } from '../db/repos/image_attachments.js';
import type { Services } from '../services.js';

/** Rows taken per look at the database. */
const BATCH = 20;

/**
 * Makes the thumbnails of uploaded images (Zulip's `thumbnail` queue worker). The queue is the
 * `image_attachments` rows still pending, so it survives a restart: at start the worker takes
 * what was left, an upload through this process wakes it, and otherwise it looks every
 * `intervalMs` (uploads through another process, or rows whose claimant died). Each row is
 * claimed first (actions/thumbnails.ts), so with several processes each image is made once.
 * Images are made one at a time: resizing is CPU work that requests must not queue behind.
 */
export class ThumbnailWorker {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private passQueued = false;
  private stopped = false;

  constructor(
    private readonly services: Services,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.wake();
  }

  /** Runs a pass soon (after the current one). */
  wake(): void {
    if (this.stopped || this.passQueued) return;
    this.passQueued = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.running.then(() => {
      this.passQueued = false;
      return this.pass();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private async pass(): Promise<void> {
    try {
      for (;;) {
        if (this.stopped) return;
        const ids = await fetchClaimableImageAttachmentIds(this.services.db.kysely, now(), BATCH);
        for (const id of ids) {
          if (this.stopped) return;
          await doEnsureThumbnails(this.services, id);
        }
        if (ids.length < BATCH) break;
      }
    } catch (e) {
      this.services.log.error({ err: e }, 'Thumbnailing failed');
    }
    if (this.stopped || this.passQueued) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.wake();
    }, this.intervalMs);
    this.timer.unref();
  }
}
