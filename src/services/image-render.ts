import sharp, { type Sharp } from 'sharp';
import { DEFAULT_QUALITY, type AskedFormat, type ImageFormat, type ImageOptions } from './image-options.js';

/** Which sharp and libvips made a variant: another version may make other bytes, so it names other variants. */
export const RENDERER = `sharp ${sharp.versions.sharp} libvips ${sharp.versions.vips}`;

export interface RenderLimits {
  /** Width × height of a frame, past which an image is not decoded. */
  readonly maxInputPixels: number;
}

export interface Rendered {
  readonly bytes: Buffer;
  readonly format: ImageFormat;
}

/**
 * The process-wide settings of libvips, from the configuration, once at start-up: the threads
 * each render may use, and no operation cache (a file service renders each variant once; the
 * cache would hold decoded pixels of images never asked for again).
 */
export function configureSharp({ threadsPerRender }: { threadsPerRender: number }): void {
  sharp.concurrency(threadsPerRender);
  sharp.cache(false);
}

/**
 * Decodes `input` (its first frame), turns it upright by its EXIF orientation, resizes it as
 * asked without ever enlarging it, and encodes it without metadata. Undefined when it does not
 * decode or has more pixels than allowed: such a file is served as stored.
 */
export async function renderVariant(input: Buffer, source: ImageFormat, options: ImageOptions, target: Exclude<AskedFormat, 'auto'>, limits: RenderLimits): Promise<Rendered | undefined> {
  const format: ImageFormat = target === 'origin' ? source : target;
  try {
    const image = sharp(input, { limitInputPixels: limits.maxInputPixels, failOn: 'error', sequentialRead: true }).rotate();
    const size = await targetSize(image, options);
    if (size) image.resize({ ...size, withoutEnlargement: true });
    if (format === 'jpeg') image.flatten({ background: '#ffffff' });
    const quality = options.quality ?? DEFAULT_QUALITY[format];
    switch (format) {
      case 'jpeg':
        image.jpeg({ quality });
        break;
      case 'webp':
        image.webp({ quality });
        break;
      case 'avif':
        // effort 4 of 0–9: a few times faster than the default for a few percent more bytes.
        image.avif({ quality, effort: 4 });
        break;
      case 'png':
        image.png();
        break;
      case 'gif':
        image.gif();
        break;
    }
    return { bytes: await image.toBuffer(), format };
  } catch {
    return undefined;
  }
}

type Resize = { width?: number; height?: number; fit: 'inside' | 'cover' };

/**
 * What to resize to. `inside` is sharp's own with no enlargement. `cover` of an image smaller than
 * the box is the largest box of the asked aspect that the image fills, so the crop keeps the
 * aspect asked for without enlarging anything; `square` alone is a square of the shorter side.
 */
async function targetSize(image: Sharp, options: ImageOptions): Promise<Resize | undefined> {
  if (options.fit === 'inside') return options.width || options.height ? { width: options.width, height: options.height, fit: 'inside' } : undefined;
  const { width: w0, height: h0, orientation } = await image.metadata();
  if (!w0 || !h0) return undefined;
  // metadata() is of the stored image; rotate() turns a quarter-turned one on its side.
  const [width, height] = orientation && orientation >= 5 ? [h0, w0] : [w0, h0];
  if (options.square) {
    const side = Math.min(width, height);
    return { width: side, height: side, fit: 'cover' };
  }
  if (options.width === undefined || options.height === undefined) return { width: options.width, height: options.height, fit: 'inside' };
  const scale = Math.min(1, width / options.width, height / options.height);
  return { width: Math.max(1, Math.round(options.width * scale)), height: Math.max(1, Math.round(options.height * scale)), fit: 'cover' };
}
