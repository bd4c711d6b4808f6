/**
 * s3-large: the service on STORAGE_BACKEND=s3 against the same transfer done directly with
 * @aws-sdk/client-s3 on the service's own client settings (multipart upload with the service's part
 * size and concurrency; GetObject read to the end), and the service's peak RSS while several large
 * files stream through it at once.
 * Needs S3_TEST_ENDPOINT and its keys (`eval "$(scripts/s3-test-server.sh env)"`); skips without them.
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
import { createS3Client } from '../../src/storage/s3-client.js';
import { download, fileContent, MiB, newClient, newSeed } from '../load.js';
import { compare, measure, type Outcome, type Variant } from '../measure.js';
import { fmt, sizeLabel } from '../format.js';
import { memoryOf } from '../processes.js';
import { prepareService, startService, type ServiceSetup } from '../service.js';
import { Ledger, type Context, type ServiceRun } from './common.js';
import { localS3ServerPids, s3DownloadReason, S3ServerCores } from './s3-server-cpu.js';
import { uploadToService } from './uploads.js';

const PART_SIZE = 16 * MiB;
const CONCURRENCY = 4;
const MEMORY_LIMIT = 250 * 1000 * 1000;
/** How many large files stream through the service at once for its peak RSS. */
const MEMORY_FILES = 3;
/**
 * Timed downloads of each side in full mode. One GET from the test store ran anywhere from 450 to
 * 600 MiB/s within a minute, and takes two seconds: five runs give a steadier median than three.
 */
const DOWNLOAD_RUNS = 5;

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
async function directUpload(s3: S3Client, Bucket: string, Key: string, seed: number, size: number): Promise<void> {
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

async function directDownload(s3: S3Client, Bucket: string, Key: string): Promise<number> {
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

export async function s3Large(ctx: Context): Promise<void> {
  const env = s3Env();
  if (!env) {
    ctx.skipped.push('s3-large: no S3 server (set S3_TEST_ENDPOINT and its keys: eval "$(scripts/s3-test-server.sh env)")');
    return;
  }
  const { opts } = ctx;
  const base = ctx.services[0]!;
  const db = base.setup.db;
  const { setup, bucket } = s3ServiceSetup(base, env);
  // The service's own client settings (HTTP handler, timeouts, checksums): the same transfer, without the service.
  const s3 = createS3Client({ ...env, bucket, forcePathStyle: true, prefix: '', partSizeBytes: PART_SIZE, uploadConcurrency: CONCURRENCY, uploadMemoryBytes: PART_SIZE * CONCURRENCY });
  // A fresh service process (it creates its bucket), so that its peak RSS is this case's own.
  const started = await startService(setup);
  const directKeys: string[] = [];
  try {
    const instance = await prepareService(setup, started);
    const run: ServiceRun = { ...base, instance, setup, ledger: new Ledger(), floor: undefined };
    const pid = started.child.pid;

    // Peak RSS first, on a process that has done nothing else yet.
    const idle = memoryOf(pid)?.hwm ?? NaN;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: MEMORY_FILES }, async () => {
        const client = newClient(instance.origin);
        try {
          await uploadToService(client, run, 'large', opts.largeSize);
        } finally {
          await client.close();
        }
      }),
    );
    const streamed = MEMORY_FILES * opts.largeSize;
    const peak = memoryOf(pid)?.hwm ?? NaN;
    ctx.memory.push({
      db,
      title: `Peak RSS on S3, ${MEMORY_FILES} × ${sizeLabel(opts.largeSize)} uploads at once`,
      idleBytes: idle,
      peakBytes: peak,
      limitBytes: MEMORY_LIMIT,
      pass: peak < MEMORY_LIMIT,
      detail: `VmHWM ${fmt(idle / 1e6)} MB when ready, ${fmt(peak / 1e6)} MB after ${sizeLabel(streamed)} in ${fmt((performance.now() - t0) / 1000, 1)} s`,
    });
    ctx.log(`  s3-large  service (${db}, s3): ready ${fmt(idle / 1e6)} MB, peak ${fmt(peak / 1e6)} MB after ${sizeLabel(streamed)}`);

    const rate = (size: number, started: number): number => size / MiB / ((performance.now() - started) / 1000);
    const serviceName = `service (${db}, s3)`;
    const directName = 'direct @aws-sdk/client-s3';
    const uploads: Variant[] = [
      {
        name: serviceName,
        pid,
        unit: 'MiB/s',
        run: async (warmup): Promise<Outcome> => {
          const size = warmup ? opts.warmLargeSize : opts.largeSize;
          const client = newClient(instance.origin);
          const t = performance.now();
          try {
            await uploadToService(client, run, 'large', size);
          } finally {
            await client.close();
          }
          return { value: rate(size, t) };
        },
      },
      {
        name: directName,
        pid: process.pid,
        unit: 'MiB/s',
        run: async (warmup): Promise<Outcome> => {
          const size = warmup ? opts.warmLargeSize : opts.largeSize;
          const key = `direct-${newSeed()}`;
          directKeys.push(key);
          const t = performance.now();
          await directUpload(s3, bucket, key, newSeed(), size);
          return { value: rate(size, t) };
        },
      },
    ];
    const up = await measure(ctx, 's3-large', uploads);
    const title = `S3: upload ${sizeLabel(opts.largeSize)}, 1 stream`;
    compare(ctx, { caseId: 's3-large', title, db, subject: up.get(serviceName), baseline: up.get(directName), target: 0.9 });

    const serviceFile = run.ledger.files.large.findLast((file) => file.size === opts.largeSize)!;
    const directKey = directKeys.at(-1)!;
    const storePids = localS3ServerPids(env.endpoint);
    const store = { relayed: new S3ServerCores(storePids), direct: new S3ServerCores(storePids) };
    const downloads: Variant[] = [
      {
        name: serviceName,
        pid,
        unit: 'MiB/s',
        run: (warmup) =>
          store.relayed.during(warmup, async (): Promise<Outcome> => {
            const client = newClient(instance.origin);
            const t = performance.now();
            try {
              const reply = await download(client, serviceFile.path);
              if (reply.status !== 200 || reply.bytes !== serviceFile.size) throw new Error(`GET ${serviceFile.path}: HTTP ${reply.status}, ${reply.bytes} bytes`);
            } finally {
              await client.close();
            }
            return { value: rate(serviceFile.size, t) };
          }),
      },
      {
        name: directName,
        pid: process.pid,
        unit: 'MiB/s',
        run: (warmup) =>
          store.direct.during(warmup, async (): Promise<Outcome> => {
            const t = performance.now();
            const bytes = await directDownload(s3, bucket, directKey);
            if (bytes !== opts.largeSize) throw new Error(`GetObject ${directKey}: ${bytes} bytes`);
            return { value: rate(bytes, t) };
          }),
      },
    ];
    const down = await measure(ctx, 's3-large', downloads, opts.mode === 'quick' ? opts.runs : Math.max(opts.runs, DOWNLOAD_RUNS));
    const relayed = down.get(serviceName)!;
    const direct = down.get(directName)!;
    compare(ctx, { caseId: 's3-large', title: `S3: download ${sizeLabel(opts.largeSize)}, 1 stream`, db, subject: relayed, baseline: direct, target: 0.9 });
    if (storePids.length > 0) {
      ctx.findings.push({
        title: `What limits S3 downloads (${db})`,
        text: s3DownloadReason({ metric: relayed, store: store.relayed.median }, { metric: direct, store: store.direct.median }),
      });
    }
  } finally {
    await started.child.stop();
    s3.destroy();
    await dropBucket(env, bucket);
  }
}
