import type { BlobStore } from './blob-store.js';
import type { ResumableBytes } from './resumable-bytes.js';

/**
 * One storage backend, a folder of src/storage/ exporting createBackend(config): where files'
 * bytes live, and where incomplete resumable uploads keep theirs (beside them, in the same store,
 * so any instance takes any upload over). Everything above it is written against these two
 * interfaces; nothing above names a backend.
 */
export interface Backend {
  readonly blobs: BlobStore;
  readonly resumable: ResumableBytes;
}
