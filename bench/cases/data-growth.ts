/**
 * data-growth: one bucket filled with more and more files (rows inserted directly, as many real
 * empty objects as OBJECTS_STORED), and at each size the same metadata reads; then ViewAllFiles of
 * the whole bucket (first byte, the service's memory rise), DeleteBucket of it, and the sweeps
 * emptying a bucket of as many expired files (durations, and other requests' latency meanwhile).
 * Prints the table "cost as the data grows".
 */
import { createHash } from 'node:crypto';
import { access, mkdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { Client } from 'undici';
import { fmt, formatValue } from '../format.js';
import { callJson, cannon } from '../load.js';
import { compare, measure, type Outcome, type Variant } from '../measure.js';
import { memoryOf } from '../processes.js';
import type { Metric } from '../results.js';
import { serviceName, type Context, type ServiceRun } from './common.js';
import { deleteBucket, sweepExpired, type ProbeBucket, type Purge } from './data-growth-purges.js';

/** Bucket sizes, smallest first: the full run reaches a million files, the quick run stops earlier. */
const SIZES = { full: [1_000, 100_000, 1_000_000], quick: [1_000, 20_000] };
/** Files that also get a real (empty) object, so that DeleteBucket and the expiry sweep remove bytes too. */
const OBJECTS_STORED = 10_000;
/** Objects without a row, older than the orphan sweep's hour, beside the expired bucket's. */
const ORPHANS = 1_000;
const LIVE = '30 days';
const EXPIRED = '-1 minute';
const INSERT_CHUNK = 100_000;
const READ_OPS = ['ViewOneFile', 'ViewMultiFiles', 'ViewBucketDetail'] as const;
type ReadOp = (typeof READ_OPS)[number];
/** Targets of the issue: reads at the largest size ≥ 0.9× at the smallest; ViewAllFiles and DeleteBucket bounds. */
const READ_TARGET = 0.9;
const FIRST_BYTE_LIMIT_MS = 100;
const MEMORY_RISE_LIMIT = 64e6;
const P99_LIMIT_MS = 100;

const sizeText = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1_000 ? `${n / 1_000}k` : String(n));
/** A storage key the service would accept: 32 hex digits, from the bucket and the file's number. */
const keySql = (bucketId: number) => `md5('growth-${bucketId}-' || i)`;
const keyOf = (bucketId: number, i: number) => createHash('md5').update(`growth-${bucketId}-${i}`).digest('hex');

async function createBucket(run: ServiceRun, prefix: string): Promise<number> {
  const name = `${prefix}-${Date.now().toString(36)}`;
  const created = await callJson(run.instance.origin, '/API/CreateBucket', { AccessToken: run.instance.token, BucketName: name, OpenToRead: true, OpenToUpload: false });
  if (created.json.Code !== 0) throw new Error(`CreateBucket failed: ${JSON.stringify(created.json)}`);
  return Number(created.json.BucketId);
}

/**
 * Rows numbered from+1 … to, in statements of INSERT_CHUNK rows; then what autovacuum (off on the
 * bench machines, on in production) would have done by the time a bucket holds that many files:
 * VACUUM, which sets the rows' hint bits and the visibility map, and ANALYZE. Without the vacuum the
 * first reads of each page write it again; then a checkpoint, so that the measured reads do not
 * share the disk and the cores with the server flushing the fill.
 */
async function fill(pool: pg.Pool, bucketId: number, from: number, to: number, expiresIn = LIVE): Promise<void> {
  for (let start = from + 1; start <= to; start += INSERT_CHUNK) {
    const end = Math.min(to, start + INSERT_CHUNK - 1);
    await pool.query(
      `INSERT INTO files (bucket_id, real_file_name, file_extension, size_bytes, upload_time, alive_days, expires_at, storage_key, sha256)
       SELECT $1, 'file-' || i || '.bin', '.bin', 0, now(), 30, now() + $4::interval, ${keySql(bucketId)}, ${keySql(bucketId)} || ${keySql(bucketId)}
       FROM generate_series($2::int, $3::int) AS i`,
      [bucketId, start, end, expiresIn],
    );
  }
  await pool.query('VACUUM (ANALYZE) files');
  await pool.query('ANALYZE buckets');
  await pool.query('CHECKPOINT');
}

/** Empty objects for files 1 … count, where the disk store keeps them; dated `age` ms ago. */
async function storeObjects(objectsDir: string, keys: string[], age = 0): Promise<string[]> {
  const paths = keys.map((key) => path.join(objectsDir, key.slice(0, 2), key));
  for (const folder of new Set(paths.map((p) => path.dirname(p)))) await mkdir(folder, { recursive: true });
  const when = new Date(Date.now() - age);
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < paths.length) {
      const file = paths[next++]!;
      await writeFile(file, '');
      if (age > 0) await utimes(file, when, when);
    }
  }));
  return paths;
}

const fileKeys = (bucketId: number, count: number) => Array.from({ length: count }, (_, i) => keyOf(bucketId, i + 1));

async function randomKeys(pool: pg.Pool, bucketId: number, count: number): Promise<number[]> {
  const { rows } = await pool.query<{ lo: string; hi: string }>('SELECT min(file_key) AS lo, max(file_key) AS hi FROM files WHERE bucket_id = $1', [bucketId]);
  const lo = Number(rows[0]!.lo);
  const hi = Number(rows[0]!.hi);
  return Array.from({ length: count }, () => lo + Math.floor(Math.random() * (hi - lo + 1)));
}

/** The read requests at one size, measured like every other case (warm-up, rotating runs, medians). */
async function measureReads(ctx: Context, run: ServiceRun, pool: pg.Pool, bucketId: number, size: number): Promise<Map<ReadOp, Metric>> {
  const keys = await randomKeys(pool, bucketId, 32 + 6 * 50);
  const paths: Record<ReadOp, string[]> = {
    ViewOneFile: keys.slice(0, 32).map((key) => `/API/ViewOneFile?FileKey=${key}`),
    ViewMultiFiles: [0, 1, 2, 3, 4, 5].map((i) => `/API/ViewMultiFiles?Ids=${keys.slice(32 + i * 50, 32 + (i + 1) * 50).join(',')}`),
    ViewBucketDetail: [`/API/ViewBucketDetail?BucketId=${bucketId}`],
  };
  const detail = await callJson(run.instance.origin, paths.ViewBucketDetail[0]!);
  if (detail.json.FileCount !== size) throw new Error(`FileCount is ${String(detail.json.FileCount)}, ${size} files are there`);
  // 2 s a run: at 1 s the sizes' medians moved by ±15 % on a busy 2-core machine, more than the target allows.
  const seconds = ctx.opts.mode === 'quick' ? 0.5 : 2;
  const variants: Variant[] = READ_OPS.map((op) => ({
    name: `${serviceName(run)} ${op} @ ${sizeText(size)} files`,
    pid: run.instance.child.pid,
    dbPids: run.dbPids,
    unit: 'req/s',
    run: async (warmup: boolean): Promise<Outcome> => {
      const result = await cannon({ origin: run.instance.origin, paths: paths[op], connections: 32, durationSec: warmup ? seconds / 2 : seconds });
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${op}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
      return { value: result.rps };
    },
  }));
  const metrics = await measure(ctx, 'data-growth', variants);
  return new Map(READ_OPS.map((op, i) => [op, metrics.get(variants[i]!.name)!]));
}

interface Listing {
  firstByteMs: number;
  seconds: number;
  bytes: number;
  files: number;
  memoryRise: number;
}

/** ViewAllFiles of the whole bucket, read to the end; the service's RSS sampled all the while. */
async function viewAllFiles(run: ServiceRun, bucketId: number): Promise<Listing> {
  const pid = run.instance.child.pid;
  const before = memoryOf(pid)?.rss ?? NaN;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(pid)?.rss ?? 0)), 20);
  const client = new Client(run.instance.origin, { headersTimeout: 120_000, bodyTimeout: 120_000 });
  try {
    const started = performance.now();
    const response = await client.request({ path: `/API/ViewAllFiles?AccessToken=${run.instance.token}&BucketId=${bucketId}`, method: 'GET' });
    let firstByteMs = NaN;
    let bytes = 0;
    let files = 0;
    let tail = '';
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      if (bytes === 0) firstByteMs = performance.now() - started;
      bytes += chunk.length;
      // Counted as they pass, never parsed whole: the bench must not hold the answer either.
      const text = tail + chunk.toString('latin1');
      files += text.split('"FileKey":').length - 1;
      tail = text.slice(-10);
      files -= tail.split('"FileKey":').length - 1;
    }
    files += tail.split('"FileKey":').length - 1;
    return { firstByteMs, seconds: (performance.now() - started) / 1000, bytes, files, memoryRise: peak - before };
  } finally {
    clearInterval(sampler);
    await client.close();
  }
}

async function missing(paths: readonly string[]): Promise<number> {
  let gone = 0;
  for (const file of paths) await access(file).then(() => {}, () => gone++);
  return gone;
}

export async function dataGrowth(ctx: Context): Promise<void> {
  for (const run of ctx.services) {
    if (!run.setup.databaseUrl) {
      ctx.skipped.push(`data-growth (${run.setup.db}): it inserts rows directly, which the in-process embedded database does not allow`);
      continue;
    }
    await growOne(ctx, run, run.setup.databaseUrl);
  }
}

async function growOne(ctx: Context, run: ServiceRun, databaseUrl: string): Promise<void> {
  const db = run.setup.db;
  const sizes = SIZES[ctx.opts.mode];
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  try {
    const bucketId = await createBucket(run, 'growth');
    const probeBucket = await createBucket(run, 'beside');
    await fill(pool, probeBucket, 0, 1_000);
    const probe: ProbeBucket = { bucketId: probeBucket, keys: await randomKeys(pool, probeBucket, 64) };
    const objectsDir = path.join(run.setup.dataDir, 'files', 'objects');
    const largest = sizes[sizes.length - 1]!;
    const smallest = sizes[0]!;
    const objects = await storeObjects(objectsDir, fileKeys(bucketId, Math.min(OBJECTS_STORED, largest)));

    // The first size would otherwise also pay for a cold service (JIT, connections, caches).
    await cannon({ origin: run.instance.origin, paths: [`/API/ViewBucketDetail?BucketId=${probeBucket}`, ...probe.keys.map((key) => `/API/ViewOneFile?FileKey=${key}`)], connections: 32, durationSec: 2 });
    const reads = new Map<number, Map<ReadOp, Metric>>();
    let filled = 0;
    for (const size of sizes) {
      const t0 = performance.now();
      await fill(pool, bucketId, filled, size);
      filled = size;
      ctx.log(`  data-growth  ${sizeText(size)} files in the bucket (filled in ${fmt((performance.now() - t0) / 1000, 1)} s)`);
      reads.set(size, await measureReads(ctx, run, pool, bucketId, size));
    }

    const listing = await viewAllFiles(run, bucketId);
    ctx.log(`  data-growth  ViewAllFiles of ${sizeText(largest)}: first byte ${fmt(listing.firstByteMs, 1)} ms, ${fmt(listing.bytes / 1e6)} MB in ${fmt(listing.seconds, 1)} s, RSS rise ${fmt(listing.memoryRise / 1e6, 1)} MB`);
    ctx.checks.push({ name: `data-growth: ViewAllFiles lists all ${sizeText(largest)} files`, db, ok: listing.files === largest, detail: `${listing.files} files in ${fmt(listing.bytes / 1e6)} MB` });

    const purge = await deleteBucket(run, bucketId, probe);
    ctx.log(`  data-growth  DeleteBucket of ${sizeText(largest)}: ${fmt(purge.seconds, 1)} s; ${purge.requests} other requests meanwhile, p99 ${fmt(purge.p99Ms, 1)} ms`);
    const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM files WHERE bucket_id = $1', [bucketId]);
    const gone = await missing(objects);
    ctx.checks.push({
      name: `data-growth: DeleteBucket of ${sizeText(largest)} files leaves no row and no object`,
      db,
      ok: Number(rows[0]!.n) === 0 && gone === objects.length && purge.failures === 0,
      detail: `${rows[0]!.n} rows left, ${objects.length - gone} of ${objects.length} objects left, ${purge.failures} failed requests meanwhile`,
    });

    const sweep = await sweepOne(ctx, run, pool, objectsDir, largest, probe);

    for (const op of READ_OPS) {
      compare(ctx, {
        caseId: 'data-growth',
        title: `${op} with ${sizeText(largest)} files in the bucket vs ${sizeText(smallest)}`,
        db,
        subject: reads.get(largest)!.get(op),
        baseline: reads.get(smallest)!.get(op),
        target: READ_TARGET,
      });
    }
    ctx.findings.push({ title: `Cost as the data grows [${db}]`, text: growthTable(sizes, reads, listing, purge, sweep) });
  } finally {
    await pool.end();
  }
}

/**
 * A bucket of `size` expired files, as many of them with objects as the first bucket, and old
 * objects without a row beside them: a second instance's sweeps must leave none of them.
 */
async function sweepOne(ctx: Context, run: ServiceRun, pool: pg.Pool, objectsDir: string, size: number, probe: ProbeBucket): Promise<Purge> {
  const bucketId = await createBucket(run, 'expired');
  const t0 = performance.now();
  await fill(pool, bucketId, 0, size, EXPIRED);
  const objects = await storeObjects(objectsDir, fileKeys(bucketId, Math.min(OBJECTS_STORED, size)));
  const orphanKeys = Array.from({ length: ORPHANS }, (_, i) => createHash('md5').update(`orphan-${bucketId}-${i}`).digest('hex'));
  const orphans = await storeObjects(objectsDir, orphanKeys, 2 * 3600_000);
  ctx.log(`  data-growth  ${sizeText(size)} expired files and ${ORPHANS} orphans in place (${fmt((performance.now() - t0) / 1000, 1)} s)`);
  const sweep = await sweepExpired(run, pool, bucketId, probe);
  ctx.log(`  data-growth  sweeps of ${sizeText(size)} expired files: ${fmt(sweep.seconds, 1)} s; ${sweep.requests} other requests meanwhile, p99 ${fmt(sweep.p99Ms, 1)} ms`);
  const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM files WHERE bucket_id = $1', [bucketId]);
  const objectsGone = await missing(objects);
  const orphansGone = await missing(orphans);
  ctx.checks.push({
    name: `data-growth: the sweeps leave none of ${sizeText(size)} expired files and ${ORPHANS} orphans`,
    db: run.setup.db,
    ok: Number(rows[0]!.n) === 0 && objectsGone === objects.length && orphansGone === orphans.length && sweep.failures === 0,
    detail: `${rows[0]!.n} rows left, ${objects.length - objectsGone} of ${objects.length} objects and ${orphans.length - orphansGone} of ${orphans.length} orphans left, ${sweep.failures} failed requests meanwhile`,
  });
  return sweep;
}

function growthTable(sizes: number[], reads: Map<number, Map<ReadOp, Metric>>, listing: Listing, purge: Purge, sweep: Purge): string {
  const largest = sizeText(sizes[sizes.length - 1]!);
  const verdict = (ok: boolean) => (ok ? 'pass' : 'MISS');
  const first = reads.get(sizes[0]!)!;
  const last = reads.get(sizes[sizes.length - 1]!)!;
  const lines = [
    '',
    '',
    `| Files in the bucket | ${sizes.map(sizeText).join(' | ')} | largest ÷ smallest (target ≥ ${READ_TARGET}) |`,
    `|---|${sizes.map(() => '---:').join('|')}|---:|`,
    ...READ_OPS.map((op) => {
      const ratio = last.get(op)!.median / first.get(op)!.median;
      return `| ${op} | ${sizes.map((size) => formatValue(reads.get(size)!.get(op)!.median, 'req/s')).join(' | ')} | ${ratio.toFixed(2)} ${verdict(ratio >= READ_TARGET)} |`;
    }),
    '',
    `| ${largest} files | Measured | Target | Result |`,
    '|---|---:|---:|---|',
    `| ViewAllFiles: first byte | ${fmt(listing.firstByteMs, 1)} ms | < ${FIRST_BYTE_LIMIT_MS} ms | ${verdict(listing.firstByteMs < FIRST_BYTE_LIMIT_MS)} |`,
    `| ViewAllFiles: service memory rise | ${fmt(listing.memoryRise / 1e6, 1)} MB | < ${fmt(MEMORY_RISE_LIMIT / 1e6, 0)} MB | ${verdict(listing.memoryRise < MEMORY_RISE_LIMIT)} |`,
    `| ViewAllFiles: whole answer | ${fmt(listing.bytes / 1e6)} MB in ${fmt(listing.seconds, 1)} s | | |`,
    `| DeleteBucket: duration | ${fmt(purge.seconds, 1)} s | | |`,
    `| DeleteBucket: other requests' p99 meanwhile (${purge.requests} requests, max ${fmt(purge.maxMs, 0)} ms) | ${fmt(purge.p99Ms, 1)} ms | < ${P99_LIMIT_MS} ms | ${verdict(purge.p99Ms < P99_LIMIT_MS)} |`,
    `| Expiry and orphan sweeps of ${largest} expired files (another instance): duration | ${fmt(sweep.seconds, 1)} s | | |`,
    `| Expiry and orphan sweeps: other requests' p99 meanwhile (${sweep.requests} requests, max ${fmt(sweep.maxMs, 0)} ms) | ${fmt(sweep.p99Ms, 1)} ms | < ${P99_LIMIT_MS} ms | ${verdict(sweep.p99Ms < P99_LIMIT_MS)} |`,
  ];
  return lines.join('\n');
}
