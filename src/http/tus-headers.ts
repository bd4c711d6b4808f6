import type { IncomingHttpHeaders } from 'node:http';

/** The tus 1.0.0 protocol's own words: versions, extensions, and the headers' formats. */

export const TUS_VERSION = '1.0.0';
/** The extensions offered, in the order OPTIONS lists them. */
export const TUS_EXTENSIONS = ['creation', 'creation-with-upload', 'termination', 'expiration'];
export const PATCH_CONTENT_TYPE = 'application/offset+octet-stream';

/** One header's value; a header sent twice counts as its first. */
export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A non-negative decimal integer header (Upload-Length, Upload-Offset); 'invalid' for anything else. */
export function sizeHeader(headers: IncomingHttpHeaders, name: string): number | 'invalid' | undefined {
  const raw = header(headers, name);
  if (raw === undefined) return undefined;
  const trimmed = raw.trim();
  return /^\d{1,16}$/.test(trimmed) && Number.isSafeInteger(Number(trimmed)) ? Number(trimmed) : 'invalid';
}

/** The body is the upload's bytes: tus's own content type. */
export function carriesUploadBytes(headers: IncomingHttpHeaders): boolean {
  return header(headers, 'content-type')?.trim().toLowerCase() === PATCH_CONTENT_TYPE;
}

const KEY = /^[^\s,]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Upload-Metadata: comma-separated `key base64value` pairs (or a key alone, for an empty value).
 * A key given twice keeps both values as a list, which the binding reports as ambiguous; undefined
 * when the header is not valid.
 */
export function parseMetadata(raw: string | undefined): Record<string, string | string[]> | undefined {
  const entries: Record<string, string | string[]> = Object.create(null);
  if (raw === undefined || raw.trim() === '') return entries;
  for (const pair of raw.split(',')) {
    const [key, value, ...rest] = pair.trim().split(/ +/);
    if (key === undefined || !KEY.test(key) || rest.length > 0 || (value !== undefined && !BASE64.test(value))) return undefined;
    const decoded = value === undefined ? '' : Buffer.from(value, 'base64').toString('utf8');
    const previous = entries[key];
    entries[key] = previous === undefined ? decoded : [previous, decoded].flat();
  }
  return entries;
}

/** The metadata as HEAD echoes it. */
export function formatMetadata(entries: Record<string, string | null>): string {
  return Object.entries(entries)
    .map(([key, value]) => (value ? `${key} ${Buffer.from(value, 'utf8').toString('base64')}` : key))
    .join(',');
}

/** Upload-Expires: an HTTP date. */
export const httpDate = (date: Date) => date.toUTCString();
