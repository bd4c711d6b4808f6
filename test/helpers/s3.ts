import { randomBytes } from 'node:crypto';
import net from 'node:net';
import {
  AbortMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { Test } from 'tap';
import { loadConfig, type S3Config } from '../../src/config.js';
import { createS3Client } from '../../src/storage/s3/client.js';

/**
 * The S3 server the tests run against: `scripts/s3-test-server.sh start` starts a Ceph RGW here and
 * prints these variables. Without them the S3 tests are skipped, saying so.
 */
const env = {
  endpoint: process.env.S3_TEST_ENDPOINT,
  region: process.env.S3_TEST_REGION ?? 'us-east-1',
  accessKeyId: process.env.S3_TEST_ACCESS_KEY_ID,
  secretAccessKey: process.env.S3_TEST_SECRET_ACCESS_KEY,
};

/** Why the S3 tests cannot run here, or false when they can: a value for tap's `skip`. */
export function whyNoS3(): string | false {
  if (env.endpoint && env.accessKeyId && env.secretAccessKey) return false;
  return 'no S3 test server: run `eval "$(scripts/s3-test-server.sh start)"` to set S3_TEST_ENDPOINT and its keys';
}

/** The service's environment for STORAGE_BACKEND=s3 on the test server, with a bucket of its own. */
export function s3ServiceEnv(bucket: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    STORAGE_BACKEND: 's3',
    S3_BUCKET: bucket,
    S3_ENDPOINT: env.endpoint!,
    S3_REGION: env.region,
    S3_ACCESS_KEY_ID: env.accessKeyId!,
    S3_SECRET_ACCESS_KEY: env.secretAccessKey!,
    ...extra,
  };
}

/** The parsed S3 settings of s3ServiceEnv(), for tests that build a store by hand. */
export function s3TestConfig(bucket: string, extra: Record<string, string> = {}): S3Config {
  return loadConfig(s3ServiceEnv(bucket, extra)).s3!;
}

/** A bucket name nobody else uses; the bucket is emptied and deleted when the test ends (the service creates it). */
export function testBucketName(t: Test): string {
  const bucket = newBucketName();
  t.teardown(() => removeTestBucket(bucket));
  return bucket;
}

export function newBucketName(): string {
  return `test-${randomBytes(8).toString('hex')}`;
}

/** Empties and deletes a test bucket, if it was ever created. */
export async function removeTestBucket(bucket: string): Promise<void> {
  const client = createS3Client(s3TestConfig(bucket));
  try {
    await emptyAndDeleteBucket(client, bucket);
  } finally {
    client.destroy();
  }
}

async function emptyAndDeleteBucket(client: S3Client, Bucket: string): Promise<void> {
  try {
    for (;;) {
      const { Uploads = [] } = await client.send(new ListMultipartUploadsCommand({ Bucket }));
      for (const { Key, UploadId } of Uploads) await client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId }));
      const { Contents = [] } = await client.send(new ListObjectsV2Command({ Bucket }));
      if (Contents.length === 0 && Uploads.length === 0) break;
      if (Contents.length > 0) await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: Contents.map(({ Key }) => ({ Key })) } }));
    }
    await client.send(new DeleteBucketCommand({ Bucket }));
  } catch (error) {
    // A test that never got as far as creating the bucket.
    if ((error as Error).name !== 'NoSuchBucket') throw error;
  }
}

export interface S3Relay {
  /** The endpoint to give the service: the relay, which forwards to the test server. */
  endpoint: string;
  /** The store goes away: the listener closes and every open connection is cut. */
  cut(): Promise<void>;
  /** The store is back, on the same port. */
  restore(): Promise<void>;
}

/**
 * A TCP relay between the service and the S3 test server, so a test can take the store away and
 * bring it back (a real outage as the service sees it) without stopping the server other tests use.
 */
export async function startS3Relay(t: Test): Promise<S3Relay> {
  const target = new URL(env.endpoint!);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
  await listen(0);
  const { port } = server.address() as net.AddressInfo;
  const cut = async () => {
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  t.teardown(cut);
  return { endpoint: `http://127.0.0.1:${port}`, cut, restore: () => listen(port) };
}
