import path from 'node:path';
import type { CorsOrigins } from './http/cors.js';
import { INSTANCE_ID, newInstanceId } from './storage/blob-store.js';

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
  /** Where file bytes live: `disk` under storageDir, or `s3` in a bucket (then `s3` is set). */
  readonly storageBackend: 'disk' | 's3';
  readonly s3: S3Config | undefined;
  /**
   * Names this process's lease and temporary writes. From INSTANCE_ID when set (a name that stays
   * the same across restarts, so a restart removes what its killed predecessor left at once);
   * otherwise random per process, and a dead process's leftovers go once its lease lapses.
   */
  readonly instanceId: string;
}

export interface S3Config {
  readonly bucket: string;
  /** Unset → AWS for `region`. */
  readonly endpoint: string | undefined;
  readonly region: string;
  /** Both unset → the AWS SDK's default credential chain. */
  readonly accessKeyId: string | undefined;
  readonly secretAccessKey: string | undefined;
  readonly forcePathStyle: boolean;
  /** Put before every object key; '' for none. */
  readonly prefix: string;
  readonly partSizeBytes: number;
  readonly uploadConcurrency: number;
  /** Parts in flight across every upload of the instance stay under this many bytes (at least one part). */
  readonly uploadMemoryBytes: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const GiB = 1024 ** 3;
export const APP_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** A configured secret must carry real entropy; generated ones have far more. */
export const MIN_SECRET_LENGTH = 16;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}".`);
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${raw}.`);
  }
  return value;
}

function flag(env: Env, name: string): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '' || raw === 'false' || raw === '0' || raw === 'no') return false;
  if (raw === 'true' || raw === '1' || raw === 'yes') return true;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}".`);
}

/** An optional flag: unset or empty → `fallback`. */
function flagOr(env: Env, name: string, fallback: boolean): boolean {
  return optional(env, name) === undefined ? fallback : flag(env, name);
}

function optional(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === undefined || raw === '' ? undefined : raw;
}

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

const MiB = 1024 ** 2;
/** S3 refuses parts under 5 MiB (but the last) and uploads of more than 10,000 parts. */
const MIN_PART_SIZE = 5 * MiB;
const MAX_PART_SIZE = 5 * GiB;
/** S3 bucket names: 3 to 63 lower-case letters, digits, dots and hyphens (what every S3-compatible store accepts). */
const S3_BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

function storageBackend(env: Env): 'disk' | 's3' {
  const raw = optional(env, 'STORAGE_BACKEND')?.toLowerCase() ?? 'disk';
  if (raw !== 'disk' && raw !== 's3') throw new ConfigError(`STORAGE_BACKEND must be disk or s3, got "${env.STORAGE_BACKEND}".`);
  return raw;
}

function s3Config(env: Env, maxUploadBytes: number): S3Config {
  const bucket = optional(env, 'S3_BUCKET');
  if (bucket === undefined) throw new ConfigError('S3_BUCKET is required when STORAGE_BACKEND is s3.');
  if (!S3_BUCKET_NAME.test(bucket)) {
    throw new ConfigError(`S3_BUCKET must be 3 to 63 characters a-z 0-9 . -, starting and ending with a letter or digit, got "${bucket}".`);
  }
  const endpoint = optional(env, 'S3_ENDPOINT');
  if (endpoint !== undefined && !/^https?:\/\/[^/?#]+\/?$/.test(endpoint)) {
    throw new ConfigError('S3_ENDPOINT must be an http(s) origin such as https://s3.example.com, without a path.');
  }
  const accessKeyId = optional(env, 'S3_ACCESS_KEY_ID');
  const secretAccessKey = optional(env, 'S3_SECRET_ACCESS_KEY');
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together, or both left unset for the default credential chain.');
  }
  const prefix = optional(env, 'S3_PREFIX') ?? '';
  if (!/^[A-Za-z0-9!_.*'()/-]*$/.test(prefix) || prefix.startsWith('/') || prefix.length > 512) {
    throw new ConfigError(`S3_PREFIX may hold only A-Z a-z 0-9 ! _ . * ' ( ) / - and must not start with /, got "${prefix.slice(0, 80)}".`);
  }
  const partSizeBytes = integer(env, 'S3_PART_SIZE_BYTES', 16 * MiB, MIN_PART_SIZE, MAX_PART_SIZE);
  if (Math.ceil(maxUploadBytes / partSizeBytes) > 10_000) {
    throw new ConfigError(`S3_PART_SIZE_BYTES must be at least MAX_UPLOAD_BYTES / 10000 (${Math.ceil(maxUploadBytes / 10_000)}): S3 takes at most 10,000 parts.`);
  }
  return Object.freeze({
    bucket,
    endpoint: endpoint?.replace(/\/$/, ''),
    region: optional(env, 'S3_REGION') ?? 'us-east-1',
    accessKeyId,
    secretAccessKey,
    forcePathStyle: flagOr(env, 'S3_FORCE_PATH_STYLE', endpoint !== undefined),
    prefix,
    partSizeBytes,
    uploadConcurrency: integer(env, 'S3_UPLOAD_CONCURRENCY', 4, 1, 64),
    uploadMemoryBytes: integer(env, 'S3_UPLOAD_MEMORY_BYTES', Math.max(64 * MiB, partSizeBytes), partSizeBytes, Number.MAX_SAFE_INTEGER),
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
    storageBackend: backend,
    s3: backend === 's3' ? s3Config(env, maxUploadBytes) : undefined,
    instanceId: instanceId ?? newInstanceId(),
  });
}
