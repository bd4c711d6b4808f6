import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import * as helmetModule from 'helmet';
import type { HelmetOptions } from 'helmet';
import { refused } from '../errors.js';
import { sendApiError } from './envelope.js';
import './route-config.js';

/**
 * helmet's function. It is the namespace's default at run time however the package loads; the cast
 * because its CommonJS typings, which the tests' TypeScript loader reads in a server's own process,
 * type that default as the module object.
 */
const helmet = helmetModule.default as unknown as (options: HelmetOptions) => (req: unknown, res: unknown, next: (error?: unknown) => void) => void;

/** Seconds a shed client is told to wait. */
export const OVERLOAD_RETRY_AFTER_SECONDS = 10;

/** Security headers of the JSON answers. */
export const SECURITY_HEADERS: HelmetOptions = {
  // The JSON answers load nothing and are never framed. A route that sets its own policy wins
  // (Fastify writes reply headers over the ones set here): downloads send `sandbox`, /docs allows
  // its own scripts.
  contentSecurityPolicy: { useDefaults: false, directives: { 'default-src': ["'none'"], 'frame-ancestors': ["'none'"] } },
  // Stored files are meant to be embedded by other sites' pages; same-origin would block them.
  crossOriginResourcePolicy: { policy: 'cross-origin' },
  // frame-ancestors covers the JSON answers; on downloads it would stop another site framing a PDF or video.
  frameguard: false,
};

/**
 * The headers helmet sets for `options`, worked out once: they depend on nothing in the request,
 * and @fastify/helmet built helmet's middleware again for every request (about a tenth of what a
 * ViewOneFile allocated).
 */
export function securityHeaders(options: HelmetOptions): ReadonlyArray<readonly [string, string]> {
  const headers = new Map<string, string>();
  const recorder = {
    setHeader: (name: string, value: string) => headers.set(name.toLowerCase(), value),
    removeHeader: (name: string) => headers.delete(name.toLowerCase()),
  };
  helmet(options)({}, recorder, (error?: unknown) => {
    if (error) throw error;
  });
  return [...headers];
}

/** Sets the security headers on the response itself, as helmet does, so a route's own header of the same name replaces one. */
export function addSecurityHeaders(headers: ReadonlyArray<readonly [string, string]>) {
  return (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    for (const [name, value] of headers) reply.raw.setHeader(name, value);
    done();
  };
}

/**
 * During shutdown everything but the service endpoints gets 503 with the envelope and
 * `Connection: close`, so the client's retry reaches another instance.
 */
export function refuseWhileShuttingDown(isShuttingDown: () => boolean) {
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    if (!isShuttingDown() || request.routeOptions.config.serviceEndpoint) return done();
    sendApiError(reply, refused.shuttingDown());
  };
}

/** A request that was in flight when shutdown began is answered with `Connection: close`, so its client reconnects elsewhere. */
export function closeWhileShuttingDown(isShuttingDown: () => boolean) {
  // A callback hook: it runs on every answer, and an async one costs a promise each time.
  return (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void) => {
    if (isShuttingDown()) reply.header('connection', 'close');
    done(null, payload);
  };
}
