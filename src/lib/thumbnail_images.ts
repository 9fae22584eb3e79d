import type { Sharp, SharpOptions } from 'sharp';
import { IMAGE_BOMB_TOTAL_PIXELS, IMAGE_MAX_ANIMATED_PIXELS, type ThumbnailFormat } from './thumbnail.js';

// The image work of thumbnailing, with libvips through sharp as Zulip does with pyvips. sharp
// is loaded on first use: processes that never see an image (and the CLI) do not pay for it.

type SharpFactory = (input: Buffer, options?: SharpOptions) => Sharp;
let factory: Promise<SharpFactory> | null = null;

function loadSharp(): Promise<SharpFactory> {
  factory ??= import('sharp').then((m) => {
    // One image at a time per call, as Zulip's worker; libvips' cache only helps repeated operations.
    m.default.cache(false);
    return m.default as unknown as SharpFactory;
  });
  return factory;
}

export interface ImageHeader {
  /** As rendered: after the EXIF orientation is applied. */
  width: number;
  height: number;
  frames: number;
}

/**
 * Zulip's maybe_thumbnail check: the header (only) of what claims to be an image, or null when
 * it does not parse or is over Zulip's pixel limits (a still image over IMAGE_BOMB_TOTAL_PIXELS,
 * or three frames of an animation over IMAGE_MAX_ANIMATED_PIXELS).
 */
export async function readImageHeader(data: Buffer): Promise<ImageHeader | null> {
  const sharp = await loadSharp();
  try {
    const meta = await sharp(data, { limitInputPixels: false }).metadata();
    const frames = meta.pages ?? 1;
    const width = meta.width;
    const height = meta.pageHeight ?? meta.height;
    if (!width || !height) return null;
    if (frames === 1 && width * height > IMAGE_BOMB_TOTAL_PIXELS) return null;
    if (frames > 1 && width * height * Math.min(3, frames) > IMAGE_MAX_ANIMATED_PIXELS) return null;
    const swapped = meta.orientation !== undefined && meta.orientation >= 5 && meta.orientation <= 8;
    return swapped ? { width: height, height: width, frames } : { width, height, frames };
  } catch {
    return null;
  }
}

export interface Thumbnail {
  data: Buffer;
  width: number;
  /** Of one frame. */
  height: number;
}

/**
 * One thumbnail, as Zulip's ensure_thumbnails makes it: scaled down (never up) to fit the
 * format's box, EXIF orientation applied; an animated format keeps as many frames as fit in
 * IMAGE_MAX_ANIMATED_PIXELS, a still one takes the first. Throws when the bytes do not decode.
 */
export async function makeThumbnail(data: Buffer, image: ImageHeader, format: ThumbnailFormat): Promise<Thumbnail> {
  const sharp = await loadSharp();
  let pages = 1;
  if (image.frames > 1 && format.animated) {
    const perFrame = image.width * image.height;
    pages = perFrame * image.frames < IMAGE_MAX_ANIMATED_PIXELS ? -1 : Math.floor(IMAGE_MAX_ANIMATED_PIXELS / perFrame);
  }
  let pipeline = sharp(data, { pages, limitInputPixels: false });
  if (pages === 1) pipeline = pipeline.rotate();
  const out = await pipeline
    .resize(format.maxWidth, format.maxHeight, { fit: 'inside', withoutEnlargement: true })
    .toFormat(format.extension as 'webp')
    .toBuffer({ resolveWithObject: true });
  const info = out.info as typeof out.info & { pageHeight?: number };
  return { data: out.data, width: info.width, height: format.animated && info.pageHeight ? info.pageHeight : info.height };
}
