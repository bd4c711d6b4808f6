import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { BlobWrite } from './blob-store.js';
import { fromFileSystemError, isStorageError } from './errors.js';

/** Bytes the disk store has written to a temp file: committed by moving them into place, or aborted. */
export class DiskWrite implements BlobWrite {
  #state: 'written' | 'committing' | 'aborted' = 'written';
  #commit: Promise<void> | undefined;

  constructor(
    readonly key: string,
    readonly size: number,
    readonly sha256: string,
    private readonly tempPath: string,
    private readonly objectPath: string,
    /** Tells the store the temp file is no longer this write's (moved into place or removed). */
    private readonly settled: () => void,
  ) {}

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
    await syncPath(this.tempPath, 'r+');
    const folder = path.dirname(this.objectPath);
    const created = await mkdir(folder, { recursive: true });
    await rename(this.tempPath, this.objectPath);
    this.settled();
    await syncPath(folder, 'r');
    // A new fan-out folder is itself an entry of objects/ that must survive a crash.
    if (created !== undefined) await syncPath(path.dirname(folder), 'r');
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

async function syncPath(file: string, flags: 'r' | 'r+'): Promise<void> {
  const handle = await open(file, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
