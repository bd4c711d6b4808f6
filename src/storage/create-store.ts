import type { Config } from '../config.js';
import type { BlobStore } from './blob-store.js';
import { DiskResumableBytes } from './disk-resumable-bytes.js';
import { DiskStore } from './disk-store.js';
import type { ResumableBytes } from './resumable-bytes.js';
import { CachedSmallReads } from './small-read-cache.js';

export interface Storage {
  /** Where files' bytes live, small reads kept in memory. */
  blobs: BlobStore;
  /** Where incomplete resumable uploads live: a folder beside the objects on disk, the same bucket on S3. */
  resumable: ResumableBytes;
}

/** The stores the configuration names. The AWS SDK is loaded only for S3: a disk deployment never pays its start-up time. */
export async function createStorage(config: Config): Promise<Storage> {
  if (config.s3) {
    const [{ createS3Client, createS3Store }, { S3ResumableBytes }] = await Promise.all([import('./s3-client.js'), import('./s3-resumable-bytes.js')]);
    const blobs = createS3Store(config.s3, config.instanceId);
    const resumable = new S3ResumableBytes(createS3Client(config.s3), {
      bucket: config.s3.bucket,
      prefix: config.s3.prefix,
      partSize: config.s3.partSizeBytes,
      concurrency: config.s3.uploadConcurrency,
      maxUploadBytes: config.maxUploadBytes,
      store: blobs,
    });
    return { blobs: new CachedSmallReads(blobs), resumable };
  }
  const blobs = new DiskStore(config.storageDir, { minFreeBytes: config.minFreeDiskBytes, instanceId: config.instanceId });
  return { blobs: new CachedSmallReads(blobs), resumable: new DiskResumableBytes(blobs) };
}
