import type { FastifyHelmetOptions } from '@fastify/helmet';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { refused } from '../errors.js';
import { sendApiError } from './envelope.js';
import './route-config.js';

/** Seconds a shed client is told to wait. */
export const OVERLOAD_RETRY_AFTER_SECONDS = 10;

/** Security headers of the JSON answers. */
export const SECURITY_HEADERS: FastifyHelmetOptions = {
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
