/** What a download may ask of an image (CONTRACT section 16), checked and normalised. */

/** What a variant can be encoded as; `gif` only as the origin format of a GIF (its first frame). */
export type ImageFormat = 'jpeg' | 'png' | 'webp' | 'avif' | 'gif';
export type AskedFormat = 'origin' | 'auto' | Exclude<ImageFormat, 'gif'>;
export type Fit = 'inside' | 'cover';

export const MAX_DIMENSION = 4096;
export const FITS: readonly Fit[] = ['inside', 'cover'];
export const ASKED_FORMATS: readonly AskedFormat[] = ['origin', 'auto', 'webp', 'avif', 'jpeg', 'png'];
/** Quality when `q` is not given. */
export const DEFAULT_QUALITY: Readonly<Record<ImageFormat, number | undefined>> = { jpeg: 80, webp: 80, avif: 50, png: undefined, gif: undefined };

/** A transformation, normalised: `square` is already `cover` of a square, and no field is left to defaults. */
export interface ImageOptions {
  readonly width: number | undefined;
  readonly height: number | undefined;
  readonly fit: Fit;
  /** Crop to a square of the shorter side when no size is given (`square=true` alone). */
  readonly square: boolean;
  readonly format: AskedFormat;
  /** As given; the default of the format served applies when undefined. */
  readonly quality: number | undefined;
}

/** The raw options as bound from a request; every value already within its range. */
export interface GivenImageOptions {
  w: number | undefined;
  h: number | undefined;
  fit: Fit | undefined;
  square: boolean | undefined;
  format: AskedFormat | undefined;
  q: number | undefined;
}

/**
 * The transformation a download asks for, or undefined when it asks for none: `fit` alone, or
 * `square=false`, or `format=origin` alone change nothing, and the file is served as stored.
 */
export function normaliseImageOptions(given: GivenImageOptions): ImageOptions | undefined {
  const format = given.format ?? 'origin';
  const square = given.square === true;
  if (given.w === undefined && given.h === undefined && !square && format === 'origin' && given.q === undefined) return undefined;
  if (square) {
    const side = given.w ?? given.h;
    return { width: side, height: side, fit: 'cover', square: side === undefined, format, quality: given.q };
  }
  return { width: given.w, height: given.h, fit: given.fit ?? 'inside', square: false, format, quality: given.q };
}

/** `auto`: AVIF when the client takes it, else WebP when it does, else the origin format. */
export function negotiateFormat(format: AskedFormat, accept: string | undefined): Exclude<AskedFormat, 'auto'> {
  if (format !== 'auto') return format;
  const takes = acceptedImageTypes(accept);
  if (takes.has('image/avif')) return 'avif';
  if (takes.has('image/webp')) return 'webp';
  return 'origin';
}

/** The media types an Accept header takes, with a quality above zero; wildcards do not count as a choice of AVIF or WebP. */
function acceptedImageTypes(accept: string | undefined): Set<string> {
  const types = new Set<string>();
  for (const entry of (accept ?? '').split(',')) {
    const [type, ...params] = entry.split(';').map((part) => part.trim().toLowerCase());
    if (!type) continue;
    const q = params.find((param) => param.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    types.add(type);
  }
  return types;
}

/**
 * The one text a normalised transformation to `target` is known by, the same on every instance: it
 * names the variant in the store and goes into its ETag. `q` counts only where it changes the
 * bytes (never for PNG); the default quality is left implicit, so `q=80` and no `q` for WebP are two
 * names of the same bytes, which costs a second copy at worst.
 */
export function variantName(options: ImageOptions, target: Exclude<AskedFormat, 'auto'>): string {
  const quality = target === 'png' ? '' : (options.quality ?? '');
  return [`w=${options.width ?? ''}`, `h=${options.height ?? ''}`, `fit=${options.fit}`, `square=${options.square}`, `to=${target}`, `q=${quality}`].join(';');
}
