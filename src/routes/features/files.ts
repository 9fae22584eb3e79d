import type { FastifyReply } from 'fastify';
import type { StoredFileRow } from '../../db/repos/stored_files.js';
import { contentDisposition, servedInline } from '../../lib/uploads.js';

/**
 * Sends a stored file. Uploaded files are private to who may see them (Cache-Control private);
 * custom emoji and avatars are public and their URLs change with their content.
 */
export function sendStoredFile(
  reply: FastifyReply,
  file: StoredFileRow,
  opts: { fileName: string; cache: 'private' | 'public'; download?: boolean },
): FastifyReply {
  const inline = !opts.download && servedInline(file.content_type);
  return reply
    .code(200)
    .header('Content-Type', file.content_type)
    .header('Content-Length', String(file.data.length))
    .header('Content-Disposition', contentDisposition(opts.fileName, inline))
    .header('X-Content-Type-Options', 'nosniff')
    // A file shown in the browser must never run as part of our origin.
    .header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox")
    .header('Cache-Control', opts.cache === 'private' ? 'private, max-age=86400, immutable' : 'public, max-age=86400')
    .send(file.data);
}

/** Zulip's HttpResponseNotFound for files: a plain page, not a JSON error (these are not API routes). */
export function sendFileNotFound(reply: FastifyReply): FastifyReply {
  return reply.code(404).header('Content-Type', 'text/html; charset=utf-8').send('<p>File not found.</p>');
}
