import { randomBytes } from 'node:crypto';
import { extname } from 'node:path';
import { JsonableError } from '../errors.js';

/** Zulip's MAX_EMOJI_FILE_SIZE_MIB default (register's max_avatar_file_size_mib lives with the settings). */
export const MAX_EMOJI_FILE_SIZE_MIB = 5;

/**
 * Keys of `stored_files`: uploaded files by their path_id, custom emoji and avatars by the
 * path their URL names, so a URL maps to exactly one row.
 */
export const storedPath = {
  upload: (pathId: string) => `uploads/${pathId}`,
  emoji: (realmId: number, fileName: string) => `emoji/${realmId}/${fileName}`,
  avatar: (realmId: number, fileName: string) => `avatars/${realmId}/${fileName}`,
};

/** The image formats accepted for custom emoji and avatars, recognized by their first bytes. */
export function sniffImageType(data: Buffer): 'image/png' | 'image/gif' | 'image/jpeg' | 'image/webp' | null {
  if (data.length >= 8 && data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (data.length >= 6 && /^GIF8[79]a$/.test(data.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'image/jpeg';
  if (data.length >= 12 && data.subarray(0, 4).toString('latin1') === 'RIFF' && data.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return null;
}

/** Zulip's BadImageError, for files that are not an image we accept. */
export const badImage = (): JsonableError => new JsonableError('Invalid image format', 'BAD_IMAGE', 400);

export const IMAGE_EXTENSIONS: Record<string, string> = { 'image/png': '.png', 'image/gif': '.gif', 'image/jpeg': '.jpeg', 'image/webp': '.webp' };

/**
 * Zulip's sanitize_name for uploaded file names: NFKC, only word characters, spaces, dots and
 * dashes, runs of spaces and dashes collapsed to one dash.
 */
export function sanitizeFileName(name: string): string {
  const value = name
    .normalize('NFKC')
    .replace(/[^\p{L}\p{N}_\s.-]/gu, '')
    .trim()
    .replace(/[-\s]+/g, '-');
  return value === '' || value === '.' || value === '..' ? 'uploaded-file' : value;
}

/** A new attachment path_id, "<realm_id>/<2 hex>/<24 random>/<sanitized name>", as Zulip makes them. */
export function newUploadPathId(realmId: number, fileName: string): string {
  const random = randomBytes(18).toString('base64url');
  return `${realmId}/${randomBytes(1).toString('hex')}/${random}/${sanitizeFileName(fileName)}`;
}

const EXTENSION_TYPES: Record<string, string> = {
  '.png': 'image/png', '.gif': 'image/gif', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.jpe': 'image/jpeg', '.webp': 'image/webp',
  '.bmp': 'image/bmp', '.svg': 'image/svg+xml', '.pdf': 'application/pdf', '.txt': 'text/plain', '.md': 'text/markdown',
  '.csv': 'text/csv', '.json': 'application/json', '.html': 'text/html', '.zip': 'application/zip', '.mp3': 'audio/mpeg',
  '.ogg': 'audio/ogg', '.wav': 'audio/wav', '.mp4': 'video/mp4', '.webm': 'video/webm', '.mov': 'video/quicktime',
};

/**
 * The stored content type of an upload: the client's declared type unless it is the generic
 * default, then a guess from the extension (as Zulip's guess_type).
 */
export function uploadContentType(fileName: string, declared: string): string {
  const d = declared.toLowerCase().split(';')[0]!.trim();
  if (d && d !== 'application/octet-stream' && /^[a-z0-9.+-]+\/[a-z0-9.+-]+$/.test(d)) return d;
  return EXTENSION_TYPES[extname(fileName).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * Zulip's INLINE_MIME_TYPES: shown in the browser; anything else is served as a download.
 * SVG and HTML are never inline: they can carry scripts.
 */
const INLINE_TYPES = new Set([
  'application/pdf', 'audio/aac', 'audio/flac', 'audio/mp4', 'audio/mpeg', 'audio/ogg', 'audio/wav', 'audio/webm',
  'image/apng', 'image/avif', 'image/gif', 'image/jpeg', 'image/png', 'image/webp', 'text/plain',
  'video/mp4', 'video/ogg', 'video/quicktime', 'video/webm',
]);

export function servedInline(contentType: string): boolean {
  return INLINE_TYPES.has(contentType);
}

/** RFC 6266 Content-Disposition for a served file, as Zulip's patch_disposition_header. */
export function contentDisposition(fileName: string, inline: boolean): string {
  const kind = inline ? 'inline' : 'attachment';
  if (/^[\x20-\x7e]*$/.test(fileName)) return `${kind}; filename="${fileName.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  return `${kind}; filename*=utf-8''${encodeURIComponent(fileName)}`;
}
