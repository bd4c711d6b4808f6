import type { IncomingHttpHeaders } from 'node:http';
import type { ByteRange } from '../storage/blob-store.js';

/** What a stored file offers to conditional and range requests. */
export interface Representation {
  readonly size: number;
  /** Strong, quoted. */
  readonly etag: string;
  readonly lastModified: Date;
}

/** How a GET or HEAD is answered, decided before any byte is read. */
export type Decision =
  | { status: 200 }
  | { status: 206; range: ByteRange }
  | { status: 304 }
  | { status: 412 }
  | { status: 416 };

/** Seconds, as HTTP dates carry them. */
const seconds = (date: Date | number) => Math.floor(new Date(date).getTime() / 1000);

function parseDate(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const time = Date.parse(value);
  return Number.isNaN(time) ? undefined : seconds(time);
}

/** The entity tags of an If-Match or If-None-Match list; `*` matches any. */
function tagList(value: string): string[] {
  return value.split(',').map((tag) => tag.trim()).filter(Boolean);
}

const weakless = (tag: string) => tag.replace(/^W\//, '');

/**
 * Ranges per RFC 9110 §14: one `bytes` range (`a-b`, `a-`, or the suffix `-n`, a suffix longer
 * than the file meaning all of it); several ranges are merged when they overlap or touch, and ranges
 * that stay apart are answered with the whole file. A header that does not parse is ignored.
 * Returns undefined for "send the whole file" and null for "nothing of it can be satisfied".
 */
export function parseRange(header: string, size: number): ByteRange | undefined | null {
  const match = /^\s*bytes\s*=\s*(.+)$/i.exec(header);
  if (!match) return undefined;
  const ranges: ByteRange[] = [];
  for (const spec of match[1]!.split(',')) {
    const part = /^\s*(\d*)\s*-\s*(\d*)\s*$/.exec(spec);
    if (!part || (part[1] === '' && part[2] === '')) return undefined;
    if (part[1] === '') {
      const suffix = Number(part[2]);
      if (suffix > 0 && size > 0) ranges.push({ start: Math.max(0, size - suffix), end: size - 1 });
      continue;
    }
    const start = Number(part[1]);
    const end = part[2] === '' ? size - 1 : Math.min(Number(part[2]), size - 1);
    if (part[2] !== '' && Number(part[2]) < start) return undefined;
    if (start < size) ranges.push({ start, end });
  }
  if (ranges.length === 0) return null;
  ranges.sort((a, b) => a.start - b.start);
  const merged = [ranges[0]!];
  for (const range of ranges.slice(1)) {
    const last = merged[merged.length - 1]!;
    if (range.start <= last.end + 1) merged[merged.length - 1] = { start: last.start, end: Math.max(last.end, range.end) };
    else merged.push(range);
  }
  return merged.length === 1 ? merged[0] : undefined;
}

/**
 * The answer to the request's preconditions (RFC 9110 §13, in its order of evaluation) and Range.
 * The decision is the same whichever store holds the bytes.
 */
export function decide(headers: IncomingHttpHeaders, file: Representation): Decision {
  const modified = seconds(file.lastModified);

  const ifMatch = headers['if-match'];
  if (ifMatch !== undefined) {
    const tags = tagList(ifMatch);
    if (!tags.includes('*') && !tags.includes(file.etag)) return { status: 412 };
  } else {
    const ifUnmodifiedSince = parseDate(headers['if-unmodified-since']);
    if (ifUnmodifiedSince !== undefined && modified > ifUnmodifiedSince) return { status: 412 };
  }

  const ifNoneMatch = headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    const tags = tagList(ifNoneMatch);
    if (tags.includes('*') || tags.some((tag) => weakless(tag) === file.etag)) return { status: 304 };
  } else {
    const ifModifiedSince = parseDate(headers['if-modified-since']);
    if (ifModifiedSince !== undefined && modified <= ifModifiedSince) return { status: 304 };
  }

  const rangeHeader = headers.range;
  if (rangeHeader === undefined) return { status: 200 };
  const ifRange = headers['if-range'];
  if (typeof ifRange === 'string') {
    // A strong validator that still matches, or the exact Last-Modified date: else the whole file.
    const validator = ifRange.trim();
    const stillMatches = validator.startsWith('"') ? validator === file.etag : parseDate(validator) === modified;
    if (!stillMatches) return { status: 200 };
  }
  const range = parseRange(rangeHeader, file.size);
  if (range === null) return { status: 416 };
  return range ? { status: 206, range } : { status: 200 };
}
