import type { FastifyReply, FastifyRequest } from 'fastify';
import { refused } from '../errors.js';
import type { Downloadable } from '../services/downloadable-files.js';
import { fileExtension } from '../services/file-names.js';
import type { ImageFormat, ImageOptions } from '../services/image-options.js';
import type { ImageVariants } from '../services/image-variants.js';
import { downloadHeaders } from './download-headers.js';
import { decide } from './ranges.js';
import type { Representation } from './send-representation.js';

/** The extension a name gets for each format served; the ones a name may already have for it. */
const EXTENSIONS: Readonly<Record<ImageFormat, readonly string[]>> = {
  jpeg: ['.jpg', '.jpeg'],
  png: ['.png'],
  webp: ['.webp'],
  avif: ['.avif'],
  gif: ['.gif'],
};

/** `name` with the extension of `format`: a variant is named for what it is. */
export function nameFor(name: string, format: ImageFormat): string {
  const extension = fileExtension(name);
  if (EXTENSIONS[format].includes(extension.toLowerCase())) return name;
  return `${extension ? name.slice(0, -extension.length) : name}${EXTENSIONS[format][0]}`;
}

export interface VariantRequest {
  file: Downloadable;
  image: ImageOptions;
  images: ImageVariants;
  naming: { attachment: boolean; suggestedName: string | undefined };
  cacheControl: string;
}

/** The answer to a conditional request that matched a variant's validators, before anything was rendered. */
export const NOT_MODIFIED = Symbol('not modified');

/**
 * The image variant of the file to send, NOT_MODIFIED (its headers set) when the request's
 * validators match it, or undefined when the file is served as stored (not a raster image, too
 * large, does not decode).
 */
export async function variantOf(request: FastifyRequest, reply: FastifyReply, { file, image, images, naming, cacheControl }: VariantRequest): Promise<Representation | typeof NOT_MODIFIED | undefined> {
  // What `auto` picks depends on Accept, whatever this file turns out to be.
  if (image.format === 'auto') reply.header('Vary', 'Accept');
  const plan = await images.plan(file, image, request.headers.accept);
  if (!plan) return undefined;
  const conditional = decide(request.headers, { size: 0, etag: plan.etag, lastModified: file.uploadTime });
  if (conditional.status === 304) {
    reply.header('Cache-Control', cacheControl).header('ETag', plan.etag).header('Last-Modified', file.uploadTime.toUTCString());
    return NOT_MODIFIED;
  }
  if (conditional.status === 412) throw refused.preconditionFailed();

  const variant = await images.ready(file, plan);
  if (!variant) return undefined;
  const suggestedName = naming.suggestedName === undefined ? undefined : nameFor(naming.suggestedName, variant.format);
  return {
    fileKey: file.fileKey,
    size: variant.size,
    etag: variant.etag,
    lastModified: file.uploadTime,
    headers: downloadHeaders(nameFor(file.fileName, variant.format), { attachment: naming.attachment, suggestedName }),
    read: (range) => images.body(file, variant, range),
  };
}
