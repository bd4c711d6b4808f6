/**
 * s3-large: the service on STORAGE_BACKEND=s3 against the same transfer done directly with
 * @aws-sdk/client-s3 on the service's own client settings (multipart upload with the service's part
 * size and concurrency; GetObject read to the end), the download also against a bare relay (GetObject
 * piped into a node:http response), and the service's peak RSS while several large files stream
 * through it at once.
 * Needs S3_TEST_ENDPOINT and its keys (`eval "$(scripts/s3-test-server.sh env)"`); skips without them.
 */
import { createS3Client } from '../../src/storage/s3/client.js';
import { download, MiB, newClient, newSeed } from '../load.js';
import { compare, measure, type Outcome, type Variant } from '../measure.js';
import { fmt, sizeLabel } from '../format.js';
import { memoryOf, startBaseline, type Child } from '../processes.js';
import { prepareService, startService } from '../service.js';
import { Ledger, MEMORY_LIMIT, type Context, type ServiceRun } from './common.js';
import { CONCURRENCY, directDownload, directUpload, dropBucket, PART_SIZE, s3Env, s3ServiceSetup } from './s3-direct.js';
import { localS3ServerPids, s3DownloadReason, S3ServerCores } from './s3-server-cpu.js';
import { uploadToService } from './uploads.js';

/** How many large files stream through the service at once for its peak RSS. */
const MEMORY_FILES = 3;
/**
 * Timed downloads of each side in full mode. One GET from the test store ran anywhere from 450 to
 * 600 MiB/s within a minute, and takes two seconds: five runs give a steadier median than three.
 */
const DOWNLOAD_RUNS = 5;

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
  let relay: Child | undefined;
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
    const store = { relayed: new S3ServerCores(storePids), direct: new S3ServerCores(storePids), bare: new S3ServerCores(storePids) };
    const bare = await startBaseline('bare s3 relay', 's3-relay-server.js', {
      BENCH_S3_ENDPOINT: env.endpoint,
      BENCH_S3_REGION: env.region,
      BENCH_S3_ACCESS_KEY_ID: env.accessKeyId,
      BENCH_S3_SECRET_ACCESS_KEY: env.secretAccessKey,
      BENCH_S3_BUCKET: bucket,
    });
    relay = bare.child;
    const bareName = 'bare relay (node:http, GetObject piped)';
    /** One GET over HTTP read to the end: the service's file, or the direct object through the bare relay. */
    const httpDownload = (name: string, processId: number, origin: string, path: string, size: number, cores: S3ServerCores): Variant => ({
      name,
      pid: processId,
      unit: 'MiB/s',
      run: (warmup) =>
        cores.during(warmup, async (): Promise<Outcome> => {
          const client = newClient(origin);
          const t = performance.now();
          try {
            const reply = await download(client, path);
            if (reply.status !== 200 || reply.bytes !== size) throw new Error(`GET ${path} (${name}): HTTP ${reply.status}, ${reply.bytes} bytes`);
          } finally {
            await client.close();
          }
          return { value: rate(size, t) };
        }),
    });
    const downloads: Variant[] = [
      httpDownload(serviceName, pid, instance.origin, serviceFile.path, serviceFile.size, store.relayed),
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
      httpDownload(bareName, bare.child.pid, bare.origin, `/${directKey}`, opts.largeSize, store.bare),
    ];
    const down = await measure(ctx, 's3-large', downloads, opts.mode === 'quick' ? opts.runs : Math.max(opts.runs, DOWNLOAD_RUNS));
    const relayed = down.get(serviceName)!;
    const direct = down.get(directName)!;
    const bareRelay = down.get(bareName)!;
    const downloadTitle = `S3: download ${sizeLabel(opts.largeSize)}, 1 stream`;
    compare(ctx, { caseId: 's3-large', title: downloadTitle, db, subject: relayed, baseline: direct, target: 0.9 });
    compare(ctx, { caseId: 's3-large', title: downloadTitle, db, subject: relayed, baseline: bareRelay });
    if (storePids.length > 0) {
      ctx.findings.push({
        title: `What limits S3 downloads (${db})`,
        text: s3DownloadReason(
          { metric: relayed, store: store.relayed.median },
          { metric: direct, store: store.direct.median },
          { metric: bareRelay, store: store.bare.median },
        ),
      });
    }
  } finally {
    await relay?.stop();
    await started.child.stop();
    s3.destroy();
    await dropBucket(env, bucket);
  }
}
