import path from 'node:path';
import { INSTANCE_ID, newInstanceId } from './instance-id.js';
import { ConfigError, flag, integer, optional, type Env } from './config-readers.js';
import { imageConfig, type ImageConfig } from './image-config.js';
import { s3Config, storageBackend, type S3Config } from './s3-config.js';

export { ConfigError } from './config-readers.js';
export type { S3Config } from './s3-config.js';
export type { ImageConfig } from './image-config.js';

/** Origins of browser apps that may call the API: `*` for any, else the exact origins allowed. */
export type CorsOrigins = '*' | readonly string[];

export interface BootstrapApp {
  readonly appId: string;
  readonly appSecret: string;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  /** Unset → the service's own PostgreSQL server, data in `dataDir`/postgres. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly storageDir: string;
  /** Origin used in InternetPaths, without a trailing slash; unset → the request's own origin. */
  readonly publicUrl: string | undefined;
  readonly trustProxy: boolean;
  readonly maxUploadBytes: number;
  /** Uploads are refused before their body is read when the storage volume has less free space. */
  readonly minFreeDiskBytes: number;
  readonly tokenLifetimeSeconds: number;
  readonly sweepIntervalSeconds: number;
  readonly bootstrapApps: readonly BootstrapApp[];
  readonly adminKey: string | undefined;
  readonly logLevel: string;
  /** Requests per minute and client address on the AccessToken endpoint. */
  readonly tokenRateLimitPerMinute: number;
  /** Requests per minute and client address on every other route; 0 turns the limit off. */
  readonly rateLimitPerMinute: number;
  /** How long in-flight requests may finish after SIGTERM/SIGINT before their connections are closed. */
  readonly shutdownGraceSeconds: number;
  /** A client must have sent its request line and headers within this time. */
  readonly headersTimeoutSeconds: number;
  /** A connection on which no byte moves either way for this long is closed (a stalled upload or reader). */
  readonly idleTimeoutSeconds: number;
  /** Load shedding: new requests get 503 while any of these is exceeded; 0 leaves that one unchecked. */
  readonly maxEventLoopDelayMs: number;
  readonly maxHeapUsedBytes: number;
  readonly maxRssBytes: number;
  /** When set, GET /metrics needs it as `Authorization: Bearer <token>`. */
  readonly metricsToken: string | undefined;
  /** Unset → rate limits are counted per instance; set → shared by all instances through this Redis. */
  readonly redisUrl: string | undefined;
  /** Prefix of the rate-limit keys in Redis, so several services can share one Redis. */
  readonly redisKeyPrefix: string;
  /** Origins of browser apps that may call the API; `*` for any, empty for none. */
  readonly corsOrigins: CorsOrigins;
  /** An incomplete resumable upload is removed this long after its last PATCH. */
  readonly resumableUploadExpirySeconds: number;
  /** Heavy requests (listings, deletions) of one app running at once on this instance. */
  readonly perAppConcurrency: number;
  /** Heavy requests of one app waiting for a turn; more are refused with 429. */
  readonly perAppQueue: number;
  /** Uploads (UploadFile, resumable PATCHes) of one app that one instance receives at once; they have turns of their own. */
  readonly perAppUploads: number;
  /** How long a heavy request may wait for its turn before it is refused with 429. */
  readonly perAppQueueTimeoutSeconds: number;
  /** Where file bytes live: `disk` under storageDir, or `s3` in a bucket (then `s3` is set). */
  readonly storageBackend: 'disk' | 's3';
  readonly s3: S3Config | undefined;
  /** Image transformations on download. */
  readonly images: ImageConfig;
  /**
   * Names this process's lease and temporary writes. From INSTANCE_ID when set (a name that stays
   * the same across restarts, so a restart removes what its killed predecessor left at once);
   * otherwise random per process, and a dead process's leftovers go once its lease lapses.
   */
  readonly instanceId: string;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const GiB = 1024 ** 3;
export const APP_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** A configured secret must carry real entropy; generated ones have far more. */
export const MIN_SECRET_LENGTH = 16;

function publicUrl(env: Env): string | undefined {
  const raw = optional(env, 'PUBLIC_URL');
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`PUBLIC_URL must be an absolute http(s) URL, got "${raw}".`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    throw new ConfigError(`PUBLIC_URL must be an absolute http(s) URL without query or fragment, got "${raw}".`);
  }
  return url.href.replace(/\/+$/, '');
}

function databaseUrl(env: Env): string | undefined {
  const raw = optional(env, 'DATABASE_URL');
  if (raw === undefined) return undefined;
  if (!/^postgres(ql)?:\/\//.test(raw)) {
    // The value may hold a password: name the variable, never echo it.
    throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL.');
  }
  return raw;
}

function corsOrigins(env: Env): CorsOrigins {
  const raw = optional(env, 'CORS_ORIGINS');
  if (raw === undefined) return [];
  if (raw === '*') return '*';
  return raw.split(',').map((entry) => {
    const candidate = entry.trim().replace(/\/+$/, '');
    let origin: string | undefined;
    try {
      const url = new URL(candidate);
      if (url.protocol === 'http:' || url.protocol === 'https:') origin = url.origin;
    } catch {
      // Reported below.
    }
    // An origin is scheme, host and port only; a path or a typo would never match a browser's Origin.
    if (origin === undefined || origin !== candidate.toLowerCase()) {
      throw new ConfigError(`CORS_ORIGINS must be * or comma-separated origins such as https://app.example.com, got "${entry.trim()}".`);
    }
    return origin;
  });
}

function redisUrl(env: Env): string | undefined {
  const raw = optional(env, 'REDIS_URL');
  if (raw === undefined) return undefined;
  if (!/^rediss?:\/\/[^/?#]/.test(raw)) {
    // The value may hold a password: name the variable, never echo it.
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL.');
  }
  return raw;
}

function bootstrapApps(env: Env): BootstrapApp[] {
  const raw = optional(env, 'BOOTSTRAP_APPS');
  if (raw === undefined) return [];
  return raw.split(',').map((entry, index) => {
    const at = entry.indexOf(':');
    const appId = at < 0 ? '' : entry.slice(0, at).trim();
    const appSecret = at < 0 ? '' : entry.slice(at + 1).trim();
    // Never echo the entry: it carries a secret.
    if (!APP_ID_PATTERN.test(appId)) {
      throw new ConfigError(
        `BOOTSTRAP_APPS entry ${index + 1} must be appId:appSecret with an appId of 1 to 64 characters A-Z a-z 0-9 _ -.`,
      );
    }
    if (appSecret.length < MIN_SECRET_LENGTH) {
      throw new ConfigError(
        `BOOTSTRAP_APPS entry ${index + 1} (app "${appId}") needs a secret of at least ${MIN_SECRET_LENGTH} characters.`,
      );
    }
    return { appId, appSecret };
  });
}

/** Reads and validates the environment once; a bad value throws a ConfigError naming the variable. */
export function loadConfig(env: Env = process.env): Config {
  const dataDir = path.resolve(optional(env, 'DATA_DIR') ?? './data');
  const adminKey = optional(env, 'ADMIN_KEY');
  if (adminKey !== undefined && adminKey.length < MIN_SECRET_LENGTH) {
    throw new ConfigError(`ADMIN_KEY must be at least ${MIN_SECRET_LENGTH} characters long.`);
  }
  const metricsToken = optional(env, 'METRICS_TOKEN');
  if (metricsToken !== undefined && metricsToken.length < MIN_SECRET_LENGTH) {
    throw new ConfigError(`METRICS_TOKEN must be at least ${MIN_SECRET_LENGTH} characters long.`);
  }
  const logLevel = optional(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}".`);
  }
  const maxUploadBytes = integer(env, 'MAX_UPLOAD_BYTES', 5 * GiB, 1, Number.MAX_SAFE_INTEGER);
  const backend = storageBackend(env);
  const instanceId = optional(env, 'INSTANCE_ID');
  if (instanceId !== undefined && !INSTANCE_ID.test(instanceId)) {
    throw new ConfigError(`INSTANCE_ID must be 1 to 63 characters a-z 0-9 -, got "${instanceId}".`);
  }
  return Object.freeze({
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: optional(env, 'HOST') ?? '0.0.0.0',
    databaseUrl: databaseUrl(env),
    dataDir,
    storageDir: path.resolve(optional(env, 'STORAGE_DIR') ?? path.join(dataDir, 'files')),
    publicUrl: publicUrl(env),
    trustProxy: flag(env, 'TRUST_PROXY'),
    maxUploadBytes,
    minFreeDiskBytes: integer(env, 'MIN_FREE_DISK_BYTES', 256 * 1024 ** 2, 0, Number.MAX_SAFE_INTEGER),
    tokenLifetimeSeconds: integer(env, 'TOKEN_LIFETIME_SECONDS', 20 * 60, 1, 365 * 24 * 3600),
    sweepIntervalSeconds: integer(env, 'SWEEP_INTERVAL_SECONDS', 10 * 60, 1, 7 * 24 * 3600),
    bootstrapApps: Object.freeze(bootstrapApps(env)),
    adminKey,
    logLevel,
    tokenRateLimitPerMinute: integer(env, 'TOKEN_RATE_LIMIT_PER_MINUTE', 30, 1, 1_000_000),
    // Generous: one page may embed hundreds of downloads from one address.
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 6000, 0, 100_000_000),
    // Kubernetes sends SIGKILL 30 s after SIGTERM by default; the rest of the shutdown fits in the gap.
    shutdownGraceSeconds: integer(env, 'SHUTDOWN_GRACE_SECONDS', 25, 1, 3600),
    headersTimeoutSeconds: integer(env, 'HEADERS_TIMEOUT_SECONDS', 30, 1, 3600),
    idleTimeoutSeconds: integer(env, 'IDLE_TIMEOUT_SECONDS', 120, 1, 24 * 3600),
    maxEventLoopDelayMs: integer(env, 'MAX_EVENT_LOOP_DELAY_MS', 1000, 0, 3_600_000),
    maxHeapUsedBytes: integer(env, 'MAX_HEAP_USED_BYTES', 0, 0, Number.MAX_SAFE_INTEGER),
    maxRssBytes: integer(env, 'MAX_RSS_BYTES', 0, 0, Number.MAX_SAFE_INTEGER),
    metricsToken,
    redisUrl: redisUrl(env),
    redisKeyPrefix: optional(env, 'REDIS_KEY_PREFIX') ?? 'filestore:rate-limit:',
    corsOrigins: corsOrigins(env),
    resumableUploadExpirySeconds: integer(env, 'RESUMABLE_UPLOAD_EXPIRY_SECONDS', 86_400, 1, 365 * 24 * 3600),
    // On a 2-core instance two heavy requests of an app keep its event loop and the database busy
    // (one serializes a page while the other's next page is fetched); more would only add work
    // inside the process that other apps' requests wait behind.
    perAppConcurrency: integer(env, 'PER_APP_CONCURRENCY', 2, 1, 10_000),
    perAppUploads: integer(env, 'PER_APP_UPLOADS', 8, 1, 10_000),
    perAppQueue: integer(env, 'PER_APP_QUEUE', 64, 0, 1_000_000),
    perAppQueueTimeoutSeconds: integer(env, 'PER_APP_QUEUE_TIMEOUT_SECONDS', 30, 1, 3600),
    storageBackend: backend,
    s3: backend === 's3' ? s3Config(env, maxUploadBytes) : undefined,
    images: Object.freeze(imageConfig(env)),
    instanceId: instanceId ?? newInstanceId(),
  });
}
