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
