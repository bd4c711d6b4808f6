import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { BlobWrite } from '../blob-store.js';
import { isStorageError } from '../errors.js';
import { fromFileSystemError } from './errors.js';

/** Bytes the disk store has written to a temp file: committed by moving them into place, or aborted. */
export class DiskWrite implements BlobWrite {
  #state: 'written' | 'committing' | 'aborted' = 'written';
  #commit: Promise<void> | undefined;

  readonly key: string;
  readonly size: number;
  readonly sha256: string;
  /** The temp file's bytes are already fsynced (by the stream that wrote them). */
  readonly #synced: boolean;

  constructor(
    written: { key: string; size: number; sha256: string; synced: boolean },
    private readonly tempPath: string,
    private readonly objectPath: string,
    /** Tells the store the temp file is no longer this write's (moved into place or removed). */
    private readonly settled: () => void,
  ) {
    this.key = written.key;
    this.size = written.size;
    this.sha256 = written.sha256;
    this.#synced = written.synced;
  }

  commit(): Promise<void> {
    if (this.#state !== 'written') return Promise.reject(new Error(`This write is already ${this.#state}.`));
    this.#state = 'committing';
    this.#commit = this.#moveIntoPlace().catch((error: unknown) => {
      throw isStorageError(error) ? error : fromFileSystemError(error);
    });
    return this.#commit;
  }

  /** fsync the temp file, rename it into place, fsync the folder: after this the bytes survive a crash. */
  async #moveIntoPlace(): Promise<void> {
    if (!this.#synced) await syncPath(this.tempPath, 'r+');
    const folder = path.dirname(this.objectPath);
    const created = await renameCreatingFolder(this.tempPath, this.objectPath);
    this.settled();
    await syncPath(folder, 'r');
    // A new fan-out folder is itself an entry of objects/ that must survive a crash.
    if (created) await syncPath(path.dirname(folder), 'r');
  }

  async abort(): Promise<void> {
    this.#state = 'aborted';
    try {
      await this.#commit?.catch(() => {});
      // Both: a commit that failed half-way may have left the bytes in either place.
      await Promise.all([rm(this.tempPath, { force: true }), rm(this.objectPath, { force: true })]);
      this.settled();
    } catch {
      // Whatever is left has no row: the orphan sweep removes it.
    }
  }
}

/**
 * Renames `from` to `to`, creating `to`'s folder only when the rename says it is missing: only the
 * first file of each fan-out folder pays for the mkdir. Tells whether the folder was created.
 */
async function renameCreatingFolder(from: string, to: string): Promise<boolean> {
  try {
    await rename(from, to);
    return false;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const created = await mkdir(path.dirname(to), { recursive: true });
  await rename(from, to);
  return created !== undefined;
}

async function syncPath(file: string, flags: 'r' | 'r+'): Promise<void> {
  const handle = await open(file, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
