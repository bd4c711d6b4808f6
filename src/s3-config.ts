import { ConfigError, flagOr, integer, optional, type Env } from './config-readers.js';

/** The settings of STORAGE_BACKEND=s3 (contract section 10). */
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
  /** The parts of every upload of the instance, being filled or in flight, stay under this many bytes (at least one part), plus one part per other upload. */
  readonly uploadMemoryBytes: number;
}

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
/** S3 refuses parts under 5 MiB (but the last) and uploads of more than 10,000 parts. */
const MIN_PART_SIZE = 5 * MiB;
const MAX_PART_SIZE = 5 * GiB;
/** S3 bucket names: 3 to 63 lower-case letters, digits, dots and hyphens (what every S3-compatible store accepts). */
const S3_BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function storageBackend(env: Env): 'disk' | 's3' {
  const raw = optional(env, 'STORAGE_BACKEND')?.toLowerCase() ?? 'disk';
  if (raw !== 'disk' && raw !== 's3') throw new ConfigError(`STORAGE_BACKEND must be disk or s3, got "${env.STORAGE_BACKEND}".`);
  return raw;
}

export function s3Config(env: Env, maxUploadBytes: number): S3Config {
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
