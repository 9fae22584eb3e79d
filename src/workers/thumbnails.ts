import { doEnsureThumbnails } from '../actions/thumbnails.js';
import { now } from '../db/index.js';
import { fetchClaimableImageAttachmentIds } from '../db/repos/image_attachments.js';
import type { Services } from '../services.js';
import { PeriodicWorker } from './periodic.js';

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
  private readonly loop: PeriodicWorker;

  constructor(
    private readonly services: Services,
    intervalMs: number,
  ) {
    this.loop = new PeriodicWorker(services.log, intervalMs, 'Thumbnailing failed', () => this.pass());
  }

  start(): void {
    this.loop.start();
  }

  /** Runs a pass soon (after the current one). */
  wake(): void {
    this.loop.wake();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  private async pass(): Promise<void> {
    for (;;) {
      if (this.loop.stopping) return;
      const ids = await fetchClaimableImageAttachmentIds(this.services.db.kysely, now(), BATCH);
      for (const id of ids) {
        if (this.loop.stopping) return;
        await doEnsureThumbnails(this.services, id);
      }
      if (ids.length < BATCH) return;
    }
  }
}
