import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { refused } from '../errors.js';
import type { ByteRange } from '../storage/blob-store.js';
import type { DownloadHeaders } from './download-headers.js';
import { decide } from './ranges.js';

/** The file each download request is serving, for the counter once the response has finished. */
const serving = new WeakMap<FastifyRequest, number>();

/** The FileKey a download request sent the bytes of (the file's own, or an image variant's), once its headers are out. */
export function servedFileKey(request: FastifyRequest): number | undefined {
  return serving.get(request);
}

/** What a download sends: the file as stored, or an image variant of it. */
export interface Representation {
  readonly fileKey: number;
  readonly size: number;
  /** Strong, quoted. */
  readonly etag: string;
  readonly lastModified: Date;
  readonly headers: DownloadHeaders;
  /** The inclusive `range` of the bytes, `length` of them. */
  read(range: ByteRange, length: number): Promise<Buffer | Readable>;
}

/**
 * Validators, conditional requests and ranges are decided here from what is known of the
 * representation alone, then only the bytes needed are read.
 */
export async function sendRepresentation(request: FastifyRequest, reply: FastifyReply, cacheControl: string, sent: Representation): Promise<FastifyReply> {
  reply
    .header('Cache-Control', cacheControl)
    .header('ETag', sent.etag)
    .header('Last-Modified', sent.lastModified.toUTCString())
    .header('Accept-Ranges', 'bytes');

  const decision = decide(request.headers, { size: sent.size, etag: sent.etag, lastModified: sent.lastModified });
  if (decision.status === 304) return reply.code(304).send();
  if (decision.status === 412) throw refused.preconditionFailed();
  if (decision.status === 416) throw refused.rangeNotSatisfiable(sent.size);

  const range = decision.status === 206 ? decision.range : undefined;
  const length = range ? range.end - range.start + 1 : sent.size;
  // Opened before the headers of a body are set, so that a store that fails is answered with the
  // envelope alone. HEAD, and an empty body, need nothing from the store.
  // The whole file as a range too: a reader that knows where the end is stops at the last byte,
  // so the response ends (and the download counts) without waiting for another read to find it.
  const bytes = range ?? { start: 0, end: sent.size - 1 };
  const body = request.method === 'GET' && length > 0 ? await sent.read(bytes, length) : undefined;
  reply.header('Content-Type', sent.headers.contentType).header('Content-Disposition', sent.headers.contentDisposition).header('Content-Length', length);
  if (range) reply.code(206).header('Content-Range', `bytes ${range.start}-${range.end}/${sent.size}`);
  serving.set(request, sent.fileKey);
  return reply.send(body);
}

