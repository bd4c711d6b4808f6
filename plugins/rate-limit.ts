import rateLimit from '@fastify/rate-limit';
import fp from 'fastify-plugin';
import { refused } from '../src/errors.js';
import type { RedisLink } from '../src/rate-limit/redis-link.js';
import { sharedStore } from '../src/rate-limit/shared-store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Whether the rate limits are counted in Redis, for all instances, right now. */
    rateLimitShared(): boolean;
  }
}

/**
 * Requests per minute and client address on every route but the service endpoints (which opt out
 * in their route config); the token endpoint and the admin routes have their own, stricter limits.
 * With REDIS_URL the counts are shared by all instances (per instance while Redis is unreachable);
 * without it, each instance counts alone.
 */
export default fp(
  async (fastify) => {
    const { rateLimitPerMinute, redisUrl, redisKeyPrefix } = fastify.config;
    let link: RedisLink | undefined;
    if (redisUrl !== undefined) {
      // ioredis is loaded only where Redis is configured: an instance without it is 4–5 MB smaller.
      const { RedisLink } = await import('../src/rate-limit/redis-link.js');
      link = new RedisLink(redisUrl, fastify.log);
    }
    if (link) fastify.addHook('onClose', async () => link?.close());
    fastify.decorate('rateLimitShared', () => link?.usable() ?? false);
    await fastify.register(rateLimit, {
      global: rateLimitPerMinute > 0,
      max: rateLimitPerMinute,
      timeWindow: 60_000,
      ...(link ? { store: sharedStore(link, redisKeyPrefix) } : {}),
      errorResponseBuilder: (_request, context) => refused.tooManyRequests(Math.max(1, Math.ceil(context.ttl / 1000))),
    });
  },
  { name: 'rate-limit', fastify: '5.x', dependencies: ['envelope'] },
);
