import underPressure from '@fastify/under-pressure';
import fp from 'fastify-plugin';
import {
  addSecurityHeaders,
  closeWhileShuttingDown,
  OVERLOAD_RETRY_AFTER_SECONDS,
  refuseWhileShuttingDown,
  SECURITY_HEADERS,
  securityHeaders,
} from '../src/http/protection.js';

/**
 * What the service adds or refuses before any handler runs: security headers, the shutdown
 * refusal and load shedding (new requests get 503 with Retry-After over a threshold, rather than
 * every request slowing down; /metrics shows filestore_under_pressure).
 */
export default fp(
  async (fastify) => {
    const { config } = fastify;
    fastify.addHook('onRequest', addSecurityHeaders(securityHeaders(SECURITY_HEADERS)));
    fastify.addHook('onRequest', refuseWhileShuttingDown(() => fastify.lifecycle.shuttingDown));
    fastify.addHook('onSend', closeWhileShuttingDown(() => fastify.lifecycle.shuttingDown));
    await fastify.register(underPressure, {
      maxEventLoopDelay: config.maxEventLoopDelayMs,
      maxHeapUsedBytes: config.maxHeapUsedBytes,
      maxRssBytes: config.maxRssBytes,
      retryAfter: OVERLOAD_RETRY_AFTER_SECONDS,
    });
  },
  { name: 'protection', fastify: '5.x', dependencies: ['envelope'] },
);
