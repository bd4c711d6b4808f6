import type { Config } from '../config.js';
import type { Backend } from './backend.js';
import { CachedSmallReads } from './small-read-cache.js';

/**
 * The backends STORAGE_BACKEND names, one folder each; loaded on use, so a disk deployment never
 * loads the AWS SDK. A new backend is a folder exporting createBackend, and one line here.
 */
const backends: Record<Config['storageBackend'], () => Promise<{ createBackend(config: Config): Backend }>> = {
  disk: () => import('./disk/index.js'),
  s3: () => import('./s3/index.js'),
};

/** The configured backend, its small reads kept in memory. */
export async function createBackend(config: Config): Promise<Backend> {
  const backend = (await backends[config.storageBackend]()).createBackend(config);
  return { blobs: new CachedSmallReads(backend.blobs), resumable: backend.resumable };
}
