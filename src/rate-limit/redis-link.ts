import { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';

/** A command that takes longer than this counts as Redis being down: requests must not wait on it. */
const COMMAND_TIMEOUT_MS = 500;
/** After a failed command, Redis is left alone this long before it is tried again. */
const COOL_OFF_MS = 5_000;
/** Reconnection attempts back off up to this interval, for as long as the instance runs. */
const MAX_RECONNECT_DELAY_MS = 2_000;

/**
 * The connection to the Redis that holds the shared rate-limit counters, and whether it can be used
 * right now. It never holds a request back: while Redis is unreachable, slow or failing, `usable()`
 * is false and the counters fall back to the instance's own memory; ioredis reconnects by itself.
 */
export class RedisLink {
  readonly redis: Redis;
  #coolOffUntil = 0;
  #reportedDown = false;
  #closing = false;

  constructor(
    url: string,
    private readonly log: FastifyBaseLogger,
  ) {
    this.redis = new Redis(url, {
      // Fail at once while disconnected instead of queueing requests behind a dead link.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 200, MAX_RECONNECT_DELAY_MS),
    });
    // The URL may carry a password: it is never logged, nor is the error's text (it can name the host).
    this.redis.on('error', (error: NodeJS.ErrnoException) => this.#down(error.code ?? error.name));
    // A lost connection stops shared counting even when it comes back before any command or
    // reconnection attempt fails, so it is reported as well.
    this.redis.on('close', () => {
      if (!this.#closing) this.#down('connection closed');
    });
    this.redis.on('ready', () => this.succeeded());
  }

  /** True while shared counting works: connected and no recent failure. */
  usable(): boolean {
    return this.redis.status === 'ready' && Date.now() >= this.#coolOffUntil;
  }

  /** A command failed (timeout, refused, lost connection): count in memory for a while. */
  failed(error: Error): void {
    this.#coolOffUntil = Date.now() + COOL_OFF_MS;
    this.#down((error as NodeJS.ErrnoException).code ?? error.name);
  }

  /** Redis answered: an outage reported before is over (a reconnection, or a slow spell that ended). */
  succeeded(): void {
    if (!this.#reportedDown) return;
    this.#reportedDown = false;
    this.log.info('rate limits are shared through Redis again');
  }

  #down(reason: string): void {
    if (this.#reportedDown) return;
    this.#reportedDown = true;
    this.log.warn({ reason }, 'Redis unreachable: rate limits are counted per instance until it is back');
  }

  close(): void {
    this.#closing = true;
    this.redis.disconnect();
  }
}
