/**
 * What can go wrong in a store, whatever the store: the HTTP layer maps each kind to an answer
 * (507, 503, 404, 413), so no caller reads ENOSPC or an S3 error name.
 */
export type StorageErrorKind = 'full' | 'unavailable' | 'not-found' | 'too-large';

export class StorageError extends Error {
  override name = 'StorageError';
  constructor(
    readonly kind: StorageErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isStorageError(error: unknown, kind?: StorageErrorKind): error is StorageError {
  return error instanceof StorageError && (kind === undefined || error.kind === kind);
}

const FULL = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

/** A file system error as a storage error; `missing` is what ENOENT means where it happened. */
export function fromFileSystemError(error: unknown, missing: 'not-found' | 'unavailable' = 'unavailable'): StorageError {
  const code = (error as NodeJS.ErrnoException | null)?.code ?? '';
  const kind = FULL.has(code) ? 'full' : code === 'ENOENT' ? missing : 'unavailable';
  return new StorageError(kind, `disk: ${code || (error as Error)?.message || 'failed'}`, { cause: error });
}
