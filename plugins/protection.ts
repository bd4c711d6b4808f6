import helmet from '@fastify/helmet';
import underPressure from '@fastify/under-pressure';
import fp from 'fastify-plugin';
import { Gauge } from 'prom-client';
import { sendEnvelope } from './envelope.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** /health, /ready and /metrics: orchestrators and scrapers must reach them whatever the state. */
    serviceEndpoint?: boolean;
    /** @fastify/under-pressure's per-route override; returning nothing lets the request through. */
    pressureHandler?: (request: FastifyRequest, reply: FastifyReply) => void;
  }
}

/** Route config of the service endpoints: no shutdown refusal, no load shedding, no rate limit. */
export const SERVICE_ENDPOINT = { serviceEndpoint: true, pressureHandler: () => {}, rateLimit: false } as const;

/** Seconds a shed client is told to wait. */
const OVERLOAD_RETRY_AFTER_SECONDS = 10;

/**
 * What the service adds or refuses before any handler runs: security headers, the shutdown
 * refusal and load shedding. (The per-address rate limit is @fastify/rate-limit, registered in app.ts.)
 */
export default fp(
  async (fastify) => {
    const { config } = fastify;

    await fastify.register(helmet, {
      // For the JSON answers, which load nothing and are never framed. A route that sets its own
      // policy wins (Fastify writes reply headers over the ones set here): downloads send `sandbox`,
      // /docs allows its own scripts.
      contentSecurityPolicy: { useDefaults: false, directives: { 'default-src': ["'none'"], 'frame-ancestors': ["'none'"] } },
      // Stored files are meant to be embedded by other sites' pages; same-origin would block them.
      crossOriginResourcePolicy: { policy: 'cross-origin' },
      // frame-ancestors covers the JSON answers; on downloads it would stop another site framing a PDF or video.
      frameguard: false,
    });

    // During shutdown everything but the service endpoints gets 503 with the envelope (Fastify's own
    // 503 body is not the envelope) and Connection: close, so the client's retry reaches another instance.
    fastify.addHook('onRequest', (request, reply, done) => {
      if (!fastify.lifecycle.shuttingDown || request.routeOptions.config.serviceEndpoint) return done();
      reply.header('Connection', 'close');
      sendEnvelope(reply, 503, { Code: -1, Message: 'The service is shutting down; send the request again.' });
    });

    // Over a threshold, new requests get 503 (mapped to the envelope by the error handler) with
    // Retry-After, rather than every request slowing down. Its status route is not exposed: /health
    // and /ready stay the probes, and /metrics shows filestore_under_pressure.
    await fastify.register(underPressure, {
      maxEventLoopDelay: config.maxEventLoopDelayMs,
      maxHeapUsedBytes: config.maxHeapUsedBytes,
      maxRssBytes: config.maxRssBytes,
      retryAfter: OVERLOAD_RETRY_AFTER_SECONDS,
    });
    new Gauge({
      name: 'filestore_under_pressure',
      help: '1 while the instance sheds load (answers 503), else 0.',
      registers: [fastify.metrics.registry],
      collect() {
        this.set(fastify.isUnderPressure() ? 1 : 0);
      },
    });
  },
  { name: 'protection', fastify: '5.x', dependencies: ['envelope', 'metrics'] },
);
