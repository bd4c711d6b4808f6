import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Readable } from 'node:stream';
import type { Downloadable } from '../services/downloadable-files.js';
import { sanitizeFileName } from '../services/file-names.js';
import type { ImageOptions } from '../services/image-options.js';
import type { BlobStore, ByteRange } from '../storage/blob-store.js';
import { downloadHeaders } from './download-headers.js';
import { sendRepresentation, servedFileKey } from './send-representation.js';
import { NOT_MODIFIED, variantOf } from './variant-reply.js';

/** Set before anything else, so that every answer of a download route carries them. */
export function setSafetyHeaders(reply: FastifyReply): void {
  reply.header('X-Content-Type-Options', 'nosniff').header('Content-Security-Policy', 'sandbox');
}

/** A query value by case-insensitive name, the first one if given twice; downloads never refuse a query. */
export function queryValue(query: unknown, name: string): string | undefined {
  if (!query || typeof query !== 'object') return undefined;
  for (const [key, value] of Object.entries(query)) {
    if (key.toLowerCase() !== name) continue;
    const first = Array.isArray(value) ? value[0] : value;
    return typeof first === 'string' ? first : undefined;
  }
  return undefined;
}

/** Strong, from the stored content: the same bytes have the same tag on every instance and every store. */
export const etagOf = (file: Pick<Downloadable, 'sha256'>) => `"${file.sha256}"`;

/** How the name in Content-Disposition was asked for: `download`/`sd` (any non-empty value) for an attachment, `name` for another name. */
export function namingOf(request: FastifyRequest): { attachment: boolean; suggestedName: string | undefined } {
  return {
    attachment: Boolean(queryValue(request.query, 'download') || queryValue(request.query, 'sd')),
    suggestedName: sanitizeFileName(queryValue(request.query, 'name')),
  };
}

/**
 * Answers a GET or HEAD for a resolved file, or for an image variant of it when `image` asks for
 * one and the file is an image this service renders. An inline view is offered only for types that
 * are safe so.
 */
export async function sendDownload(request: FastifyRequest, reply: FastifyReply, file: Downloadable, cacheControl: string, image?: ImageOptions): Promise<FastifyReply> {
  if (image && request.server.images) {
    const variant = await variantOf(request, reply, { file, image, images: request.server.images, naming: namingOf(request), cacheControl });
    if (variant === NOT_MODIFIED) return reply.code(304).send();
    if (variant) return sendRepresentation(request, reply, cacheControl, variant);
  }
  const storage = request.server.storage;
  return sendRepresentation(request, reply, cacheControl, {
    fileKey: file.fileKey,
    size: file.size,
    etag: etagOf(file),
    lastModified: file.uploadTime,
    headers: downloadHeaders(file.fileName, namingOf(request)),
    read: (range, length) => readBody(storage, file.storageKey, range, length),
  });
}

/** Bodies up to this size are read whole and sent in one write: a stream costs more than the bytes. */
const WHOLE_BODY_BYTES = 64 * 1024;

function readBody(storage: BlobStore, key: string, bytes: ByteRange, length: number): Promise<Buffer | Readable> {
  if (length <= WHOLE_BODY_BYTES) return storage.read(key, bytes);
  return storage.open(key, bytes).then((read) => read.stream);
}

/**
 * A completed GET: a 200 that sent the whole file, or a 206 from byte 0; never HEAD, 304, errors or
 * aborted transfers. An aborted transfer never finishes its response, so Fastify runs onResponse
 * for it only if the response failed, which writableFinished tells apart.
 */
function completedDownload(request: FastifyRequest, reply: FastifyReply): boolean {
  if (request.method !== 'GET' || !reply.raw.writableFinished) return false;
  if (reply.statusCode === 200) return true;
  return reply.statusCode === 206 && /^bytes 0-/.test(String(reply.getHeader('content-range') ?? ''));
}

/**
 * Route options shared by every download route: GET and HEAD with one handler (Fastify's own HEAD
 * routes would answer Content-Length: 0 for a body the handler never reads), docs, and counting
 * on completion. The schema only describes the route for /docs: a download never refuses a query
 * or a header it does not understand, and its envelopes are sent as they are.
 */
export function downloadRoute(
  schema: RouteOptions['schema'],
): Pick<RouteOptions, 'method' | 'exposeHeadRoute' | 'schema' | 'validatorCompiler' | 'serializerCompiler' | 'onResponse'> {
  return {
    method: ['GET', 'HEAD'],
    exposeHeadRoute: false,
    schema,
    validatorCompiler: () => () => true,
    serializerCompiler: () => (data) => JSON.stringify(data),
    onResponse: async (request, reply) => {
      const fileKey = servedFileKey(request);
      if (fileKey !== undefined && completedDownload(request, reply)) request.server.downloadCounter.record(fileKey);
    },
  };
}
