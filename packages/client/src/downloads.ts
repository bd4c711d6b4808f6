import type { CallOptions, ClientContext } from './context.js';
import { invalidArguments, problems } from './errors.js';
import { checkParams } from './params.js';
import { integer } from './shapes.js';
import { errorOf, readEnvelope, send } from './transport.js';

/** Bytes `start` to `end` (inclusive; to the end of the file when unset), or the last `suffix` bytes. */
export type ByteRange = { start: number; end?: number | undefined } | { suffix: number };

/** An image resized on download (images only; anything else comes unchanged). */
export interface ImageOptions {
  /** Width and height in pixels, 1–4096; no mode enlarges an image. */
  w?: number | undefined;
  h?: number | undefined;
  /** `inside` (default): within w×h, the aspect kept; `cover`: fills w×h, the overflow cropped. */
  fit?: 'inside' | 'cover' | undefined;
  /** A square of w (or h): cover of w×w. */
  square?: boolean | undefined;
  /** `auto` picks AVIF, else WebP, else the original's format, by what the client accepts. */
  format?: 'origin' | 'auto' | 'webp' | 'avif' | 'jpeg' | 'png' | undefined;
  /** Quality 1–100 (JPEG, WebP, AVIF). */
  q?: number | undefined;
}

export interface DownloadOptions extends CallOptions {
  range?: ByteRange | undefined;
  /** A variant of an image: resized, converted (see ImageOptions). */
  image?: ImageOptions | undefined;
  /** Send the range only if the file still has this ETag (or Last-Modified): else the whole file. */
  ifRange?: string | undefined;
  /** The ETag of a copy held: an unchanged file answers 304 without a body. */
  ifNoneMatch?: string | undefined;
  /** Ask for Content-Disposition: attachment. */
  attachment?: boolean | undefined;
  /** Another file name for Content-Disposition. */
  name?: string | undefined;
  /** HEAD: the headers only (no download is counted, no use of a secret is spent). */
  headOnly?: boolean | undefined;
}

/** A download: what its headers say, and its bytes as a stream. */
export interface Download {
  /** 200 the whole file, 206 a range, 304 not modified. */
  status: 200 | 206 | 304;
  /** Bytes in this answer. */
  size: number;
  /** Bytes of the whole file, when the answer tells. */
  totalSize: number | undefined;
  /** The bytes of the file this answer carries (inclusive), for a 206. */
  range: { start: number; end: number } | undefined;
  etag: string | undefined;
  lastModified: Date | undefined;
  contentType: string | undefined;
  /** From Content-Disposition. */
  fileName: string | undefined;
  /** The bytes (null for HEAD and 304): read it, or cancel it, to free the connection. */
  body: ReadableStream<Uint8Array> | null;
  bytes(): Promise<Uint8Array>;
  text(): Promise<string>;
}

function rangeHeader(range: ByteRange): string {
  if ('suffix' in range) {
    if (!Number.isSafeInteger(range.suffix) || range.suffix < 1) throw invalidArguments([problems.notValid(range.suffix, 'range.suffix')]);
    return `bytes=-${range.suffix}`;
  }
  const items: string[] = [];
  if (!Number.isSafeInteger(range.start) || range.start < 0) items.push(problems.notValid(range.start, 'range.start'));
  if (range.end !== undefined && (!Number.isSafeInteger(range.end) || range.end < range.start)) items.push(problems.notValid(range.end, 'range.end'));
  if (items.length > 0) throw invalidArguments(items);
  return `bytes=${range.start}-${range.end ?? ''}`;
}

/** The file name of a Content-Disposition header: filename* (RFC 5987) first, else filename. */
export function dispositionName(header: string | null): string | undefined {
  if (!header) return undefined;
  const extended = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(header);
  if (extended) {
    try {
      return decodeURIComponent(extended[1]!.trim());
    } catch {
      // Fall back to the plain name.
    }
  }
  const plain = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/.exec(header) ?? /filename\s*=\s*([^;]+)/.exec(header);
  return plain?.[1]?.replace(/\\(.)/g, '$1').trim();
}

/** The image options the service checks, checked here first in its words. */
const IMAGE_PARAMS = { w: integer(1, 4096, false), h: integer(1, 4096, false), q: integer(1, 100, false) };

export async function download(ctx: ClientContext, url: URL, options: DownloadOptions = {}): Promise<Download> {
  if (options.image) checkParams(IMAGE_PARAMS, { w: options.image.w, h: options.image.h, q: options.image.q });
  if (options.attachment) url.searchParams.set('download', '1');
  if (options.name !== undefined) url.searchParams.set('name', options.name);
  for (const [name, value] of Object.entries(options.image ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
  const headers: Record<string, string> = {};
  // `auto` is chosen by Accept: say what a browser's <img> would take.
  if (options.image?.format === 'auto') headers.Accept = 'image/avif,image/webp,*/*';
  if (options.range) headers.Range = rangeHeader(options.range);
  if (options.ifRange) headers['If-Range'] = options.ifRange;
  if (options.ifNoneMatch) headers['If-None-Match'] = options.ifNoneMatch;
  const method = options.headOnly ? 'HEAD' : 'GET';
  const response = await send(ctx.transport, url, () => ({ method, headers }), { signal: options.signal, idempotent: true });
  if (response.status !== 200 && response.status !== 206 && response.status !== 304) {
    throw errorOf(response, method === 'HEAD' ? undefined : await readEnvelope(response));
  }
  const length = Number(response.headers.get('content-length') ?? NaN);
  const contentRange = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(response.headers.get('content-range') ?? '');
  const range = contentRange ? { start: Number(contentRange[1]), end: Number(contentRange[2]) } : undefined;
  const total = contentRange ? (contentRange[3] === '*' ? undefined : Number(contentRange[3])) : response.status === 200 && !Number.isNaN(length) ? length : undefined;
  const modified = response.headers.get('last-modified');
  const body = method === 'HEAD' || response.status === 304 ? null : response.body;
  return {
    status: response.status as 200 | 206 | 304,
    size: Number.isNaN(length) ? 0 : length,
    totalSize: total,
    range,
    etag: response.headers.get('etag') ?? undefined,
    lastModified: modified ? new Date(modified) : undefined,
    contentType: response.headers.get('content-type') ?? undefined,
    fileName: dispositionName(response.headers.get('content-disposition')),
    body,
    bytes: async () => (body ? new Uint8Array(await response.arrayBuffer()) : new Uint8Array()),
    text: async () => (body ? response.text() : ''),
  };
}
