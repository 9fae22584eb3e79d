import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { PROJECT_ROOT } from '../../lib/project_files.js';

/**
 * The images the API's URLs name when nothing was uploaded: the organization's default icon
 * and wide logo, the avatar shown for a user the caller may not see, and the spinner of an
 * uploaded image whose thumbnail is not made yet (lib/thumbnail.ts). They live in the
 * repository's static/ folder and are read once at start.
 */
const IMAGES: Record<string, string> = {
  'realm-icon.png': 'image/png',
  'realm-logo.svg': 'image/svg+xml',
  'unknown-user-avatar.png': 'image/png',
  'loading/loader-black.svg': 'image/svg+xml',
};

export function registerStaticRoutes(app: FastifyInstance): void {
  for (const [name, contentType] of Object.entries(IMAGES)) {
    const data = readFileSync(join(PROJECT_ROOT, 'static', 'images', name));
    app.get(`/static/images/${name}`, async (_req, reply) =>
      // The URLs carry ?version=, changed whenever the organization's image changes.
      reply.header('Content-Type', contentType).header('Cache-Control', 'public, max-age=86400').send(data),
    );
  }
}
