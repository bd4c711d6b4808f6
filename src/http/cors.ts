import type { FastifyCorsOptions } from '@fastify/cors';
import type { CorsOrigins } from '../config.js';

/**
 * Cross-origin access for browser apps on the origins of CORS_ORIGINS: the /API operations,
 * resumable uploads (tus) and downloads. Other origins get no CORS header at all, and their
 * preflight is not answered, so the browser refuses the call.
 */

/** Request headers a browser app may send: the token header, downloads' conditions and ranges, tus's own. */
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Range',
  'If-Range',
  'If-Match',
  'If-None-Match',
  'If-Modified-Since',
  'If-Unmodified-Since',
  'Tus-Resumable',
  'Upload-Length',
  'Upload-Offset',
  'Upload-Metadata',
  'Upload-Defer-Length',
  'Upload-Concat',
  'X-HTTP-Method-Override',
  'X-Requested-With',
];

/** Response headers a browser app may read besides the safelisted ones: tus's, and downloads'. */
export const CORS_EXPOSED_HEADERS = [
  'Upload-Offset',
  'Upload-Length',
  'Upload-Metadata',
  'Upload-Expires',
  'Upload-File-Key',
  'Upload-File-Path',
  'Location',
  'Tus-Resumable',
  'Tus-Version',
  'Tus-Extension',
  'Tus-Max-Size',
  'Content-Range',
  'Accept-Ranges',
  'Content-Disposition',
  'ETag',
  'Retry-After',
];

export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'OPTIONS'];

/** Seconds a browser may reuse a preflight answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;


export function corsOptions(origins: CorsOrigins): FastifyCorsOptions {
  const allowed = new Set(origins === '*' ? [] : origins);
  const preflight: FastifyCorsOptions = {
    // Answering with the caller's own origin (never a list) and nothing at all for others.
    origin: (origin, callback) => callback(null, origin !== undefined && (origins === '*' || allowed.has(origin)) ? origin : false),
    methods: CORS_METHODS,
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    // Tokens travel in a header, never in cookies: no credentials mode.
    credentials: false,
  };
  // An OPTIONS request that is no preflight (no Access-Control-Request-Method), such as a tus
  // client asking for the server's capabilities, goes on to its route, with the CORS headers.
  const plain: FastifyCorsOptions = { ...preflight, preflight: false };
  return {
    delegator: (request, callback) =>
      callback(null, request.method === 'OPTIONS' && request.headers['access-control-request-method'] === undefined ? plain : preflight),
  };
}
