import { createRequire } from 'node:module';
import type { FastifyRateLimitOptions, FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Redis } from 'ioredis';
import type { RedisLink } from './redis-link.js';

// @fastify/rate-limit's own two stores are the halves of the shared one; the package ships them
// as CommonJS without type declarations.
const require = createRequire(import.meta.url);
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache?: number,
) => FastifyRateLimitStore;
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: Redis,
  key: string,
) => FastifyRateLimitStore;

type Incr = FastifyRateLimitStore['incr'];

/** What @fastify/rate-limit passes to a store and its children (its merged limiter options). */
interface StoreOptions {
  continueExceeding?: boolean;
  exponentialBackoff?: boolean;
  cache?: number;
  groupId?: string;
  routeInfo?: { method?: string | string[]; url?: string };
}

function halves(link: RedisLink, options: StoreOptions, redisPrefix: string): [FastifyRateLimitStore, FastifyRateLimitStore] {
  const continueExceeding = options.continueExceeding ?? false;
  const exponentialBackoff = options.exponentialBackoff ?? false;
  return [
    new RedisStore(continueExceeding, exponentialBackoff, link.redis, redisPrefix),
    new LocalStore(continueExceeding, exponentialBackoff, options.cache),
  ];
}

/**
 * Counts in Redis, shared by every instance, while the link is usable, and in the instance's memory
 * otherwise: a Redis outage makes the limits per instance for a while, never a failed request.
 */
class SharedStore implements FastifyRateLimitStore {
  constructor(
    private readonly link: RedisLink,
    private readonly shared: FastifyRateLimitStore,
    private readonly local: FastifyRateLimitStore,
    private readonly keyPrefix: string,
  ) {}

  incr(key: string, callback: Parameters<Incr>[1], timeWindow: number, max: number): void {
    if (!this.link.usable()) return this.local.incr(key, callback, timeWindow, max);
    this.shared.incr(
      key,
      (error, result) => {
        if (!error) {
          this.link.succeeded();
          return callback(null, result);
        }
        this.link.failed(error);
        this.local.incr(key, callback, timeWindow, max);
      },
      timeWindow,
      max,
    );
  }

  /**
   * A route's (or a named limiter's) own counters. Redis keys are named by the limiter's groupId,
   * else by its route, so every instance counts one limit under one key.
   */
  child(routeOptions: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore {
    const options = routeOptions as StoreOptions;
    const name = options.groupId ?? `${options.routeInfo?.method}:${options.routeInfo?.url}`;
    return new SharedStore(this.link, ...halves(this.link, options, `${this.keyPrefix}${name}:`), this.keyPrefix);
  }
}

/** The store class @fastify/rate-limit instantiates; the general limit's keys are under `<keyPrefix>all:`. */
export function sharedStore(link: RedisLink, keyPrefix: string): FastifyRateLimitStoreCtor {
  return class extends SharedStore {
    constructor(options: FastifyRateLimitOptions) {
      super(link, ...halves(link, options as StoreOptions, `${keyPrefix}all:`), keyPrefix);
    }
  };
}
