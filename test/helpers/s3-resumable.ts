import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { Test } from 'tap';
import { createS3Client } from '../../src/storage/s3/client.js';
import { s3Store } from '../../src/storage/s3/index.js';
import type { S3ResumableBytes } from '../../src/storage/s3/resumable-bytes.js';
import type { S3Store } from '../../src/storage/s3/store.js';
import { startService } from './service.js';
import { s3ServiceEnv, s3TestConfig, testBucketName } from './s3.js';

const MiB = 1024 * 1024;

/** Where an upload's bytes go in the bucket: its multipart upload is begun at its file's object key, which is its id. */
export const objectKeyOf = (id: string) => `${id.slice(0, 2)}/${id}`;

/** A fresh bucket, created by a service started on it, with the client, file store and resumable store options over it. */
export async function freshBucket(t: Test, partSize: number) {
  const bucket = testBucketName(t);
  await startService(t, { env: s3ServiceEnv(bucket) });
  const client = createS3Client(s3TestConfig(bucket));
  t.teardown(() => client.destroy());
  const store = s3Store(client, s3TestConfig(bucket), 'test');
  return { bucket, client, store, options: { bucket, prefix: '', partSize, concurrency: 2, maxUploadBytes: 64 * MiB, store } };
}

/** What the bucket holds for resumable uploads: incomplete multipart uploads anywhere, and objects under resumable/. */
export async function resumableLeftovers(bucket: string): Promise<{ uploads: string[]; objects: string[] }> {
  const client = createS3Client(s3TestConfig(bucket));
  try {
    const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    const objects = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'resumable/' }));
    return { uploads: (uploads.Uploads ?? []).map((u) => u.Key!), objects: (objects.Contents ?? []).map((o) => o.Key!) };
  } finally {
    client.destroy();
  }
}

/** Completes what `bytes` holds for `id` and reads the object back; the object is removed afterwards. */
export async function finishAndRead(bytes: S3ResumableBytes, store: S3Store, id: string): Promise<Buffer> {
  const write = await bytes.finish(id, { maxBytes: 64 * MiB });
  await write.commit();
  const chunks: Buffer[] = [];
  for await (const chunk of (await store.open(write.key)).stream) chunks.push(chunk as Buffer);
  await store.remove([write.key]);
  return Buffer.concat(chunks);
}
