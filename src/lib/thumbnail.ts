import { escapeAttribute } from './markdown/serialize.js';
import { servedInline } from './uploads.js';

// Zulip's thumbnailing of uploaded images (zerver/lib/thumbnail.py): the formats, which of them
// an image still needs, and the rewriting of rendered messages once they exist. Pure: the image
// work is in lib/thumbnail_images.ts, the rows and events in actions/thumbnails.ts.

export interface ThumbnailFormat {
  extension: string;
  maxWidth: number;
  maxHeight: number;
  animated: boolean;
}

/** One thumbnail made (Zulip's StoredThumbnailFormat, the same JSON keys). */
export interface StoredThumbnailFormat {
  extension: string;
  max_width: number;
  max_height: number;
  animated: boolean;
  content_type: string;
  width: number;
  height: number;
  byte_size: number;
}

/**
 * Zulip's THUMBNAIL_OUTPUT_FORMATS: the first animated and the first still format are the ones
 * written into rendered messages. Large, so clients that do not rewrite the URL get an image
 * that does not look pixelated.
 */
export const THUMBNAIL_OUTPUT_FORMATS: readonly ThumbnailFormat[] = [
  { extension: 'webp', maxWidth: 840, maxHeight: 560, animated: true },
  { extension: 'webp', maxWidth: 840, maxHeight: 560, animated: false },
];

/** Zulip's TRANSCODED_IMAGE_FORMAT: also made for images browsers do not show (HEIC, TIFF...). */
const TRANSCODED_IMAGE_FORMAT: ThumbnailFormat = { extension: 'webp', maxWidth: 4032, maxHeight: 3024, animated: false };

/** Zulip's THUMBNAIL_ACCEPT_IMAGE_TYPES: the declared types whose bytes are parsed at all. */
export const THUMBNAIL_ACCEPT_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/avif', 'image/gif', 'image/heic', 'image/jpeg', 'image/png', 'image/tiff', 'image/webp', 'image/svg+xml',
]);

/** Zulip's IMAGE_BOMB_TOTAL_PIXELS and IMAGE_MAX_ANIMATED_PIXELS. */
export const IMAGE_BOMB_TOTAL_PIXELS = 90_000_000;
export const IMAGE_MAX_ANIMATED_PIXELS = IMAGE_BOMB_TOTAL_PIXELS / 3;

/** Where loading placeholders point, as in Zulip (served by routes/static). */
export const THUMBNAIL_SPINNER_URL = '/static/images/loading/loader-black.svg';

/** "840x560.webp", "840x560-anim.webp": the last path component of a thumbnail URL. */
export function formatName(f: { maxWidth: number; maxHeight: number; animated: boolean; extension: string }): string {
  return `${f.maxWidth}x${f.maxHeight}${f.animated ? '-anim' : ''}.${f.extension}`;
}

export function storedFormatName(s: StoredThumbnailFormat): string {
  return formatName({ maxWidth: s.max_width, maxHeight: s.max_height, animated: s.animated, extension: s.extension });
}

/** Zulip's BaseThumbnailFormat.from_string. */
export function parseFormatName(name: string): ThumbnailFormat | null {
  const m = /^(\d+)x(\d+)(-anim)?\.(\w+)$/.exec(name);
  if (!m) return null;
  return { maxWidth: Number(m[1]), maxHeight: Number(m[2]), animated: m[3] !== undefined, extension: m[4]! };
}

/** register's server_thumbnail_formats. */
export function serverThumbnailFormats(): { name: string; max_width: number; max_height: number; format: string; animated: boolean }[] {
  return THUMBNAIL_OUTPUT_FORMATS.map((f) => ({ name: formatName(f), max_width: f.maxWidth, max_height: f.maxHeight, format: f.extension, animated: f.animated }));
}

/** What a thumbnail decision needs of an image_attachments row. */
export interface ImageInfo {
  path_id: string;
  original_width_px: number;
  original_height_px: number;
  frames: number;
  content_type: string | null;
  thumbnail_metadata: string;
}

export function storedFormats(image: Pick<ImageInfo, 'thumbnail_metadata'>): StoredThumbnailFormat[] {
  return JSON.parse(image.thumbnail_metadata) as StoredThumbnailFormat[];
}

/** Zulip's missing_thumbnails: formats not made yet (no animated ones for a still image). */
export function missingThumbnails(image: ImageInfo): ThumbnailFormat[] {
  const seen = new Set(storedFormats(image).map(storedFormatName));
  const wanted = [...THUMBNAIL_OUTPUT_FORMATS];
  if (image.content_type === null || !servedInline(image.content_type)) {
    const t = TRANSCODED_IMAGE_FORMAT;
    // Portrait images get a portrait transcoded version.
    wanted.push(image.original_width_px >= image.original_height_px ? t : { ...t, maxWidth: t.maxHeight, maxHeight: t.maxWidth });
  }
  return wanted.filter((f) => !seen.has(formatName(f)) && (image.frames > 1 || !f.animated));
}

/** The thumbnail's path after /user_uploads/. */
export function thumbnailPath(pathId: string, formatName: string): string {
  return `thumbnail/${pathId}/${formatName}`;
}

/** How an uploaded image is shown in a rendered message (Zulip's MarkdownImageMetadata). */
export interface UploadPreview {
  /** The default thumbnail's URL; null while none is made (a spinner is rendered). */
  url: string | null;
  isAnimated: boolean;
  width: number;
  height: number;
  contentType: string | null;
  /** Name of the high-resolution format made for types browsers do not show. */
  transcodedImage: string | null;
}

/** Zulip's get_user_upload_previews entry for one row (get_default_thumbnail_url, get_transcoded_format). */
export function uploadPreview(image: ImageInfo): UploadPreview {
  const stored = storedFormats(image);
  const base = { width: image.original_width_px, height: image.original_height_px, contentType: image.content_type };
  if (stored.length === 0) return { ...base, url: null, isAnimated: false, transcodedImage: null };
  const format = THUMBNAIL_OUTPUT_FORMATS.find((f) => f.animated === image.frames > 1) ?? THUMBNAIL_OUTPUT_FORMATS[0]!;
  let transcodedImage: string | null = null;
  if (image.content_type !== null && !servedInline(image.content_type)) {
    const largest = [...stored].sort((a, b) => a.width * a.height - b.width * b.height).pop()!;
    transcodedImage = storedFormatName(largest);
  }
  return { ...base, url: `/user_uploads/${thumbnailPath(image.path_id, formatName(format))}`, isAnimated: format.animated, transcodedImage };
}

/** The spinner `img` attributes of an uploaded image's link preview (the Markdown renderer sorts them). */
export function spinnerAttributes(p: UploadPreview): [string, string][] {
  const out: [string, string][] = [['class', 'image-loading-placeholder'], ['src', THUMBNAIL_SPINNER_URL], ['data-original-dimensions', `${p.width}x${p.height}`]];
  if (p.contentType) out.push(['data-original-content-type', p.contentType]);
  return out;
}

/**
 * The spinner rewritten into the thumbnail as Zulip's rewrite_thumbnailed_images does it with
 * BeautifulSoup: the class goes, the other attributes keep their (sorted) places, the new ones
 * come last.
 */
function thumbnailImgTag(p: UploadPreview & { url: string }): string {
  const attributes: [string, string][] = [];
  if (p.contentType) attributes.push(['data-original-content-type', p.contentType]);
  attributes.push(['data-original-dimensions', `${p.width}x${p.height}`], ['src', p.url]);
  if (p.isAnimated) attributes.push(['data-animated', 'true']);
  if (p.transcodedImage !== null) attributes.push(['data-transcoded-image', p.transcodedImage]);
  return `<img ${attributes.map(([k, v]) => `${k}="${escapeAttribute(v)}"`).join(' ')}>`;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const INLINE_IMAGE_SPINNER = /<img [^>]*class="inline-image image-loading-placeholder"[^>]*>/g;
const TAG_ATTRIBUTE = / ([^\s=>]+)(?:="([^"]*)")?/g;

/**
 * An image of the Markdown image syntax rewritten the same way: the loading class goes from
 * the class list, `src` becomes the thumbnail, the attributes BeautifulSoup adds come last, and
 * an empty one is written bare, as Zulip's html_formatter writes it.
 */
function thumbnailInlineImgTag(tag: string, p: UploadPreview & { url: string }): string {
  const attributes = new Map<string, string | null>([...tag.matchAll(TAG_ATTRIBUTE)].map((m) => [m[1]!, m[2] ?? null]));
  attributes.set('class', 'inline-image');
  attributes.set('src', escapeAttribute(p.url));
  attributes.set('data-original-dimensions', `${p.width}x${p.height}`);
  if (p.contentType) attributes.set('data-original-content-type', escapeAttribute(p.contentType));
  if (p.isAnimated) attributes.set('data-animated', 'true');
  if (p.transcodedImage !== null) attributes.set('data-transcoded-image', escapeAttribute(p.transcodedImage));
  return `<img ${[...attributes].map(([k, v]) => (v ? `${k}="${v}"` : k)).join(' ')}>`;
}

/**
 * Zulip's rewrite_thumbnailed_images for one upload: the spinners of its link previews and of
 * its images shown with the image syntax become the thumbnail (`preview`), or, when it could
 * not be thumbnailed (null), the whole preview, or the image, goes. Returns null when the
 * message has no spinner for it.
 */
export function rewriteThumbnailedImage(html: string, pathId: string, preview: (UploadPreview & { url: string }) | null): string | null {
  const src = escapeAttribute(`/user_uploads/${pathId}`);
  const href = escapeRegExp(src);
  const pattern = new RegExp(
    `(<div class="message_inline_image"><a href="${href}"(?: title="[^"]*")?>)<img class="image-loading-placeholder"[^>]*>(</a></div>)`,
    'g',
  );
  let changed = false;
  let out = html.replace(pattern, (_m, open: string, close: string) => {
    changed = true;
    return preview === null ? '' : `${open}${thumbnailImgTag(preview)}${close}`;
  });
  if (out.includes('class="inline-image image-loading-placeholder"')) {
    out = out.replace(INLINE_IMAGE_SPINNER, (tag) => {
      if (!tag.includes(` data-original-src="${src}"`)) return tag;
      changed = true;
      return preview === null ? '' : thumbnailInlineImgTag(tag, preview);
    });
  }
  return changed ? out : null;
}
