import type { Config } from '../config.js';
import type { BlobStore } from './blob-store.js';
import { DiskStore } from './disk-store.js';

/** The store the configuration names. */
export function createBlobStore(config: Config): BlobStore {
  return new DiskStore(config.storageDir, { minFreeBytes: config.minFreeDiskBytes });
}
