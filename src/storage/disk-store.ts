import { access, constants, mkdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { BlobStore } from './blob-store.js';

/**
 * Bytes under one folder: `tmp/` for uploads in progress and `objects/` for stored files, on the
 * same file system so a finished upload is moved into place by an atomic rename.
 */
export class DiskStore implements BlobStore {
  readonly tmpDir: string;
  readonly objectsDir: string;

  constructor(readonly root: string) {
    this.tmpDir = path.join(root, 'tmp');
    this.objectsDir = path.join(root, 'objects');
  }

  async prepare(): Promise<void> {
    await mkdir(this.tmpDir, { recursive: true });
    await mkdir(this.objectsDir, { recursive: true });
  }

  async isWritable(): Promise<boolean> {
    try {
      await access(this.tmpDir, constants.W_OK);
      await access(this.objectsDir, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  }

  async remove(storageKeys: readonly string[]): Promise<void> {
    for (const key of storageKeys) {
      try {
        await unlink(path.join(this.objectsDir, key.slice(0, 2), key));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
}
