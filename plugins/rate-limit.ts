import rateLimit from '@fastify/rate-limit';
import fp from 'fastify-plugin';
import { refused } from '../src/errors.js';

/**
 * Requests per minute and client address on every route but the service endpoints (which opt out
 * in their route config); the token endpoint and the admin routes have their own, stricter limits.
 */
export default fp(
  async (fastify) => {
    const { rateLimitPerMinute } = fastify.config;
    await fastify.register(rateLimit, {
      global: rateLimitPerMinute > 0,
      max: rateLimitPerMinute,
      timeWindow: 60_000,
      errorResponseBuilder: (_request, context) => refused.tooManyRequests(Math.max(1, Math.ceil(context.ttl / 1000))),
    });
  },
  { name: 'rate-limit', fastify: '5.x', dependencies: ['envelope'] },
);
