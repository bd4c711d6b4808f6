import { StorageError } from '../errors.js';

/** The HTTP status of an AWS SDK error, if the store answered at all. */
export function httpStatus(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

/** An S3 error's name, code and HTTP status, never its message (which may quote a request). */
export function describeS3Error(error: unknown): string {
  const status = httpStatus(error);
  const name = (error as Error | null)?.name ?? 'Error';
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return [name, code !== name && code, status && `HTTP ${status}`].filter(Boolean).join(', ');
}

const S3_FULL = new Set(['QuotaExceeded', 'EntityTooLarge', 'InsufficientCapacity']);
const S3_MISSING = new Set(['NoSuchKey', 'NotFound']);

/**
 * An S3 store's error as a storage error: a missing object is `missing` where that can happen, a
 * quota is 'full', and everything else (unreachable, throttling, refused credentials) is
 * 'unavailable': the request may succeed later, and the answer is 503 with Retry-After.
 */
export function fromS3Error(error: unknown, missing: 'not-found' | 'unavailable' = 'unavailable'): StorageError {
  const name = (error as Error | null)?.name ?? '';
  const kind = S3_FULL.has(name) ? 'full' : S3_MISSING.has(name) || httpStatus(error) === 404 ? missing : 'unavailable';
  return new StorageError(kind, `s3: ${describeS3Error(error)}`, { cause: error });
}
