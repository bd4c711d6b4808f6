import type { FastifyRequest } from 'fastify';
import { ApiError, problems } from '../errors.js';
import { ASKED_FORMATS, FITS, MAX_DIMENSION, normaliseImageOptions, type AskedFormat, type Fit, type ImageOptions } from '../services/image-options.js';
import { bindParameters, field, type Source } from './binding.js';

const oneOf =
  <T extends string>(values: readonly T[]) =>
  (value: string, name: string) =>
    values.includes(value.trim().toLowerCase() as T) ? undefined : problems.oneOf(name, values);

/** The transformation options of every download route (CONTRACT section 16); names in any case, like every parameter. */
export const imageParams = {
  w: field.optionalInteger({ minimum: 1, maximum: MAX_DIMENSION, default: undefined, description: 'Width in pixels to resize an image to (never enlarged).' }),
  h: field.optionalInteger({ minimum: 1, maximum: MAX_DIMENSION, default: undefined, description: 'Height in pixels to resize an image to (never enlarged).' }),
  fit: field.optionalText({ check: oneOf(FITS), description: '`inside` (default): within w×h, aspect kept; `cover`: fills w×h, cropping the overflow.' }),
  square: field.optionalText({ check: oneOf(['true', 'false']), description: '`true`: a square crop of w×w (h×h when only h is given).' }),
  format: field.optionalText({ check: oneOf(ASKED_FORMATS), description: '`origin` (default), `webp`, `avif`, `jpeg`, `png`, or `auto` (AVIF or WebP when Accept takes them).' }),
  q: field.optionalInteger({ minimum: 1, maximum: 100, default: undefined, description: 'Quality for JPEG, WebP and AVIF (default 80, AVIF 50); ignored for PNG.' }),
};

/**
 * The image transformation a download asks for, or undefined when it asks for none or the feature
 * is off. Checked before the file is looked up or a secret used: a bad value is a 400 with the
 * envelope, whatever the file.
 */
export function imageOptionsOf(request: FastifyRequest): ImageOptions | undefined {
  if (!request.server.images) return undefined;
  const query = request.query as Source;
  if (!query || Object.keys(query).length === 0) return undefined;
  let bound;
  try {
    bound = bindParameters(imageParams, query);
  } catch (error) {
    if (error instanceof ApiError) throw error.withStatus(400);
    throw error;
  }
  const lower = (value: string | undefined) => value?.trim().toLowerCase();
  return normaliseImageOptions({
    w: bound.w,
    h: bound.h,
    fit: lower(bound.fit) as Fit | undefined,
    square: bound.square === undefined ? undefined : lower(bound.square) === 'true',
    format: lower(bound.format) as AskedFormat | undefined,
    q: bound.q,
  });
}
