import path from 'node:path';
import type { SendOptions } from '@fastify/static';
import type { FastifyError, FastifyReply, FastifyRequest, FastifySchema, RouteShorthandOptions } from 'fastify';
import { sendEnvelope } from '../../plugins/envelope.js';
import { failure } from '../errors.js';
import type { Downloadable } from '../services/downloads.js';
import { FILE_NOT_FOUND } from '../services/files.js';
import { sanitizeFileName } from '../services/file-names.js';
import { downloadHeaders } from './download-headers.js';

/**
 * Read chunks of 1 MiB: @fastify/static does not pass its plugin options on to sendFile, and the
 * default 16 KiB chunks make large downloads about three times slower on Node 20.
 */
const SEND_OPTIONS: SendOptions & { highWaterMark: number } = {
  acceptRanges: true,
  cacheControl: false,
  contentType: false,
  etag: true,
  lastModified: true,
  index: false,
  highWaterMark: 1024 * 1024,
};

/** The file each download request is serving, for the counter once the response has finished. */
const serving = new WeakMap<FastifyRequest, number>();

export const fileNotFound = () => failure(FILE_NOT_FOUND, 404);

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

/**
 * Streams a resolved file with ranges, ETag and conditional GET, as an inline view only for types
 * that are safe so; `download`/`sd` (any non-empty value) ask for an attachment and `name` for
 * another file name. Only the database's storage key names the bytes that are opened.
 */
export function serveFile(request: FastifyRequest, reply: FastifyReply, file: Downloadable, cacheControl: string): FastifyReply {
  const attachment = Boolean(queryValue(request.query, 'download') || queryValue(request.query, 'sd'));
  const suggestedName = sanitizeFileName(queryValue(request.query, 'name'));
  const headers = downloadHeaders(file.fileName, { attachment, suggestedName });
  const bytes = request.server.storage.pathOf(file.storageKey);
  serving.set(request, file.fileKey);
  return reply
    .header('Content-Type', headers.contentType)
    .header('Content-Disposition', headers.contentDisposition)
    .header('Cache-Control', cacheControl)
    .sendFile(path.basename(bytes), path.dirname(bytes), SEND_OPTIONS);
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

/** Ranges and preconditions the file cannot meet get their own status, still with the envelope. */
function downloadErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.removeHeader('Content-Disposition');
  const status = (error as { status?: number }).status ?? error.statusCode;
  if (status === 416) {
    const range = (error as { headers?: Record<string, string> }).headers?.['Content-Range'];
    if (range) reply.header('Content-Range', range);
    return sendEnvelope(reply, 416, { Code: -1, Message: 'The requested range is not within the file.' });
  }
  if (status === 412) {
    return sendEnvelope(reply, 412, { Code: -1, Message: 'The file does not match the request’s precondition.' });
  }
  return request.server.errorHandler(error, request, reply);
}

/**
 * What the OpenAPI docs list for a route. Parameters are left out: the binder validates them.
 * FastifySchema names `summary` and `tags` only once @fastify/swagger's types are loaded.
 */
export function docsSchema(summary: string): FastifySchema {
  return { summary, tags: ['Downloads'] } as FastifySchema;
}

/** Route options shared by every download route: docs, counting on completion, and range/precondition refusals. */
export function downloadRouteOptions(summary: string): RouteShorthandOptions {
  return {
    schema: docsSchema(summary),
    errorHandler: downloadErrorHandler,
    onResponse: async (request, reply) => {
      const fileKey = serving.get(request);
      if (fileKey !== undefined && completedDownload(request, reply)) request.server.downloadCounter.record(fileKey);
    },
  };
}
