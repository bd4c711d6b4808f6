import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Readable } from 'node:stream';
import { refused } from '../errors.js';
import type { Downloadable } from '../services/downloadable-files.js';
import { sanitizeFileName } from '../services/file-names.js';
import type { BlobStore, ByteRange } from '../storage/blob-store.js';
import { downloadHeaders } from './download-headers.js';
import { decide } from './ranges.js';

/** The file each download request is serving, for the counter once the response has finished. */
const serving = new WeakMap<FastifyRequest, number>();

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

/**
 * Answers a GET or HEAD for a resolved file: validators, conditional requests and ranges are
 * decided here from the row alone, then only the bytes needed are read from the store. An inline
 * view is offered only for types that are safe so; `download`/`sd` (any non-empty value) ask for
 * an attachment and `name` for another file name.
 */
export async function sendDownload(request: FastifyRequest, reply: FastifyReply, file: Downloadable, cacheControl: string): Promise<FastifyReply> {
  const attachment = Boolean(queryValue(request.query, 'download') || queryValue(request.query, 'sd'));
  const suggestedName = sanitizeFileName(queryValue(request.query, 'name'));
  const headers = downloadHeaders(file.fileName, { attachment, suggestedName });
  const etag = etagOf(file);
  reply
    .header('Cache-Control', cacheControl)
    .header('ETag', etag)
    .header('Last-Modified', file.uploadTime.toUTCString())
    .header('Accept-Ranges', 'bytes');

  const decision = decide(request.headers, { size: file.size, etag, lastModified: file.uploadTime });
  if (decision.status === 304) return reply.code(304).send();
  if (decision.status === 412) throw refused.preconditionFailed();
  if (decision.status === 416) throw refused.rangeNotSatisfiable(file.size);

  const range = decision.status === 206 ? decision.range : undefined;
  const length = range ? range.end - range.start + 1 : file.size;
  // Opened before the headers of a body are set, so that a store that fails is answered with the
  // envelope alone. HEAD, and an empty body, need nothing from the store.
  // The whole file as a range too: a reader that knows where the end is stops at the last byte,
  // so the response ends (and the download counts) without waiting for another read to find it.
  const bytes = range ?? { start: 0, end: file.size - 1 };
  const body = request.method === 'GET' && length > 0 ? await readBody(request.server.storage, file.storageKey, bytes, length) : undefined;
  reply.header('Content-Type', headers.contentType).header('Content-Disposition', headers.contentDisposition).header('Content-Length', length);
  if (range) reply.code(206).header('Content-Range', `bytes ${range.start}-${range.end}/${file.size}`);
  serving.set(request, file.fileKey);
  return reply.send(body);
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
      const fileKey = serving.get(request);
      if (fileKey !== undefined && completedDownload(request, reply)) request.server.downloadCounter.record(fileKey);
    },
  };
}
