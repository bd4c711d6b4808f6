import path from 'node:path';

export interface BootstrapApp {
  readonly appId: string;
  readonly appSecret: string;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  /** Unset → embedded PostgreSQL (PGlite) under `dataDir`. */
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
  const logLevel = optional(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}".`);
  }
  return Object.freeze({
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: optional(env, 'HOST') ?? '0.0.0.0',
    databaseUrl: databaseUrl(env),
    dataDir,
    storageDir: path.resolve(optional(env, 'STORAGE_DIR') ?? path.join(dataDir, 'files')),
    publicUrl: publicUrl(env),
    trustProxy: flag(env, 'TRUST_PROXY'),
    maxUploadBytes: integer(env, 'MAX_UPLOAD_BYTES', 5 * GiB, 1, Number.MAX_SAFE_INTEGER),
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
  });
}
