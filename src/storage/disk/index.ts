import type { Config } from '../../config.js';
import type { Backend } from '../backend.js';
import { DiskResumableBytes } from './resumable-bytes.js';
import { DiskStore } from './store.js';

/** Bytes under STORAGE_DIR: objects/ for files, tmp/ for writes in progress, resumable/ for incomplete uploads. */
export function createBackend(config: Config): Backend {
  const blobs = new DiskStore(config.storageDir, { minFreeBytes: config.minFreeDiskBytes, instanceId: config.instanceId });
  return { blobs, resumable: new DiskResumableBytes(blobs) };
}
