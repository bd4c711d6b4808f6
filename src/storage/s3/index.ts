import type { S3Client } from '@aws-sdk/client-s3';
import type { Config, S3Config } from '../../config.js';
import type { Backend } from '../backend.js';
import { createS3Client } from './client.js';
import { S3ResumableBytes } from './resumable-bytes.js';
import { S3Store } from './store.js';

/** Bytes in the bucket S3_BUCKET of an S3-compatible store: files under their keys, incomplete uploads as multipart uploads. */
export function createBackend(config: Config): Backend {
  const s3 = config.s3;
  if (!s3) throw new Error('STORAGE_BACKEND=s3 without its settings');
  const client = createS3Client(s3);
  const blobs = s3Store(client, s3, config.instanceId);
  const resumable = new S3ResumableBytes(client, {
    bucket: s3.bucket,
    prefix: s3.prefix,
    partSize: s3.partSizeBytes,
    concurrency: s3.uploadConcurrency,
    maxUploadBytes: config.maxUploadBytes,
    store: blobs,
  });
  return { blobs, resumable };
}

/** The files' store of the S3 settings. */
export function s3Store(client: S3Client, s3: S3Config, instanceId: string): S3Store {
  return new S3Store(client, {
    bucket: s3.bucket,
    prefix: s3.prefix,
    partSize: s3.partSizeBytes,
    concurrency: s3.uploadConcurrency,
    partSlots: Math.floor(s3.uploadMemoryBytes / s3.partSizeBytes),
    instanceId,
  });
}
