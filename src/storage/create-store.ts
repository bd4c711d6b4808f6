import type { Config } from '../config.js';
import type { BlobStore } from './blob-store.js';
import { DiskResumableBytes } from './disk-resumable-bytes.js';
import { DiskStore } from './disk-store.js';
import type { ResumableBytes } from './resumable-bytes.js';

/** The store the configuration names. The AWS SDK is loaded only for an S3 store: a disk deployment never pays its start-up time. */
export async function createBlobStore(config: Config): Promise<BlobStore> {
  if (config.s3) {
    const { createS3Store } = await import('./s3-client.js');
    return createS3Store(config.s3, config.instanceId);
  }
  return new DiskStore(config.storageDir, { minFreeBytes: config.minFreeDiskBytes, instanceId: config.instanceId });
}

/** Where the configured backend keeps incomplete resumable uploads: the same bucket on S3, a folder beside the objects on disk. */
export async function createResumableBytes(config: Config): Promise<ResumableBytes> {
  if (config.s3) {
    const [{ createS3Client }, { S3ResumableBytes }] = await Promise.all([import('./s3-client.js'), import('./s3-resumable-bytes.js')]);
    return new S3ResumableBytes(createS3Client(config.s3), { bucket: config.s3.bucket, prefix: config.s3.prefix, partSize: config.s3.partSizeBytes });
  }
  return new DiskResumableBytes(config.storageDir);
}
