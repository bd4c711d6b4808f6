/**
 * The S3 cases' side without the service: the test store's settings, a service set up to store on
 * it, and the same transfers done directly with @aws-sdk/client-s3, as the service's store does them.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { fileContent, MiB } from '../load.js';
import type { ServiceSetup } from '../service.js';
import type { ServiceRun } from './common.js';

export const PART_SIZE = 16 * MiB;
export const CONCURRENCY = 4;

export function s3Env(): { endpoint: string; region: string; accessKeyId: string; secretAccessKey: string } | undefined {
  const { S3_TEST_ENDPOINT, S3_TEST_REGION, S3_TEST_ACCESS_KEY_ID, S3_TEST_SECRET_ACCESS_KEY } = process.env;
  if (!S3_TEST_ENDPOINT || !S3_TEST_ACCESS_KEY_ID || !S3_TEST_SECRET_ACCESS_KEY) return undefined;
  return { endpoint: S3_TEST_ENDPOINT, region: S3_TEST_REGION ?? 'us-east-1', accessKeyId: S3_TEST_ACCESS_KEY_ID, secretAccessKey: S3_TEST_SECRET_ACCESS_KEY };
}

/** The file's content cut into parts of PART_SIZE, one buffer each. */
function* parts(seed: number, size: number): Generator<Buffer> {
  let pending: Buffer[] = [];
  let length = 0;
  for (const chunk of fileContent(seed, size)) {
    pending.push(chunk);
    length += chunk.length;
    if (length >= PART_SIZE) {
      const joined = Buffer.concat(pending, length);
      yield joined.subarray(0, PART_SIZE);
      pending = length > PART_SIZE ? [joined.subarray(PART_SIZE)] : [];
      length -= PART_SIZE;
    }
  }
  if (length > 0) yield Buffer.concat(pending, length);
}

/** A multipart upload straight to S3, CONCURRENCY parts in flight, as the service's store does it. */
export async function directUpload(s3: S3Client, Bucket: string, Key: string, seed: number, size: number): Promise<void> {
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
  const done: Array<{ PartNumber: number; ETag: string }> = [];
  const source = parts(seed, size);
  let next = 1;
  try {
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let item = source.next(); !item.done; item = source.next()) {
          const PartNumber = next++;
          const reply = await s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body: item.value, ContentLength: item.value.length }));
          done.push({ PartNumber, ETag: reply.ETag! });
        }
      }),
    );
    done.sort((a, b) => a.PartNumber - b.PartNumber);
    await s3.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: done } }));
  } catch (error) {
    await s3.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId })).catch(() => {});
    throw error;
  }
}

export async function directDownload(s3: S3Client, Bucket: string, Key: string): Promise<number> {
  const reply = await s3.send(new GetObjectCommand({ Bucket, Key }));
  let bytes = 0;
  for await (const chunk of reply.Body as AsyncIterable<Buffer>) bytes += chunk.length;
  return bytes;
}

/** The settings of a service like `base` but storing on S3, in a bucket of its own (the service creates it). */
export function s3ServiceSetup(base: ServiceRun, env: NonNullable<ReturnType<typeof s3Env>>): { setup: ServiceSetup; bucket: string } {
  const bucket = `bench-${randomBytes(6).toString('hex')}`;
  const setup: ServiceSetup = {
    ...base.setup,
    cpuProfDir: undefined,
    dataDir: path.join(base.setup.dataDir, '..', `s3-${bucket}`),
    extraEnv: {
      STORAGE_BACKEND: 's3',
      S3_BUCKET: bucket,
      S3_ENDPOINT: env.endpoint,
      S3_REGION: env.region,
      S3_ACCESS_KEY_ID: env.accessKeyId,
      S3_SECRET_ACCESS_KEY: env.secretAccessKey,
      S3_FORCE_PATH_STYLE: 'true',
      S3_PART_SIZE_BYTES: String(PART_SIZE),
      S3_UPLOAD_CONCURRENCY: String(CONCURRENCY),
    },
  };
  return { setup, bucket };
}

/** Removes the bucket a bench service created and everything in it: several GiB on the S3 server's disk. */
export async function dropBucket(env: NonNullable<ReturnType<typeof s3Env>>, Bucket: string): Promise<void> {
  const s3 = new S3Client({ endpoint: env.endpoint, region: env.region, forcePathStyle: true, credentials: { accessKeyId: env.accessKeyId, secretAccessKey: env.secretAccessKey } });
  try {
    for (;;) {
      const { Uploads = [] } = await s3.send(new ListMultipartUploadsCommand({ Bucket }));
      for (const { Key, UploadId } of Uploads) await s3.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId }));
      const { Contents = [] } = await s3.send(new ListObjectsV2Command({ Bucket }));
      if (Contents.length === 0 && Uploads.length === 0) break;
      if (Contents.length > 0) await s3.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: Contents.map(({ Key }) => ({ Key })) } }));
    }
    await s3.send(new DeleteBucketCommand({ Bucket }));
  } finally {
    s3.destroy();
  }
}
