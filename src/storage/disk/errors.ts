import { StorageError } from '../errors.js';

const FULL = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

/** A file system error as a storage error; `missing` is what ENOENT means where it happened. */
export function fromFileSystemError(error: unknown, missing: 'not-found' | 'unavailable' = 'unavailable'): StorageError {
  const code = (error as NodeJS.ErrnoException | null)?.code ?? '';
  const kind = FULL.has(code) ? 'full' : code === 'ENOENT' ? missing : 'unavailable';
  return new StorageError(kind, `disk: ${code || (error as Error)?.message || 'failed'}`, { cause: error });
}
