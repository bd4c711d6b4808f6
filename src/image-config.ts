import { availableParallelism } from 'node:os';
import { ConfigError, integer, optional, type Env } from './config-readers.js';

/** The settings of image transformations on download (contract section 16). */
export interface ImageConfig {
  /** IMAGE_TRANSFORMATIONS=off: the options are ignored and every file is served as stored. */
  readonly enabled: boolean;
  readonly maxInputPixels: number;
  readonly maxInputBytes: number;
  readonly cacheBytes: number;
  /** Renders at once on this instance; each holds one of libuv's threads while it runs. */
  readonly concurrency: number;
  /** Renders that may wait for a slot; past them a request gets 503 with Retry-After. */
  readonly queueLength: number;
  /** libvips threads per render: the cores shared among the renders that run at once. */
  readonly threadsPerRender: number;
}

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
/** libuv's own default and maximum for UV_THREADPOOL_SIZE. */
const LIBUV_DEFAULT_THREADS = 4;
const LIBUV_MAX_THREADS = 1024;
/** Threads of libuv's pool that renders never take, so disk reads and writes go on beside them. */
export const THREADS_KEPT_FOR_DISK = 2;

function enabled(env: Env): boolean {
  const raw = optional(env, 'IMAGE_TRANSFORMATIONS')?.toLowerCase() ?? 'on';
  if (raw === 'on' || raw === 'true') return true;
  if (raw === 'off' || raw === 'false') return false;
  throw new ConfigError(`IMAGE_TRANSFORMATIONS must be on or off, got "${env.IMAGE_TRANSFORMATIONS}".`);
}

/**
 * The pool size libuv read when the process started: it is set in the environment before node
 * starts (a module runs too late, its own loading has started the pool), and only checked here.
 */
function libuvThreads(env: Env): number {
  return integer(env, 'UV_THREADPOOL_SIZE', LIBUV_DEFAULT_THREADS, 1, LIBUV_MAX_THREADS);
}

export function imageConfig(env: Env): ImageConfig {
  const on = enabled(env);
  const threads = libuvThreads(env);
  // By default every thread of the pool that the disk does not keep renders.
  const concurrency = integer(env, 'IMAGE_CONCURRENCY', Math.max(1, threads - THREADS_KEPT_FOR_DISK), 1, 256);
  if (on && concurrency + THREADS_KEPT_FOR_DISK > threads) {
    throw new ConfigError(
      `IMAGE_CONCURRENCY=${concurrency} needs UV_THREADPOOL_SIZE of at least ${concurrency + THREADS_KEPT_FOR_DISK}, so that disk reads keep ` +
        `${THREADS_KEPT_FOR_DISK} threads of their own while renders run; it is ${threads}. Set UV_THREADPOOL_SIZE in the environment the service starts in.`,
    );
  }
  return {
    enabled: on,
    maxInputPixels: integer(env, 'IMAGE_MAX_INPUT_PIXELS', 50_000_000, 1, 2 ** 32),
    maxInputBytes: integer(env, 'IMAGE_MAX_INPUT_BYTES', 128 * MiB, 1, Number.MAX_SAFE_INTEGER),
    cacheBytes: integer(env, 'IMAGE_CACHE_BYTES', GiB, 0, Number.MAX_SAFE_INTEGER),
    concurrency,
    queueLength: integer(env, 'IMAGE_QUEUE_LENGTH', 32, 0, 100_000),
    threadsPerRender: Math.max(1, Math.floor(availableParallelism() / concurrency)),
  };
}
