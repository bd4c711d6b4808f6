/**
 * images: image transformations on download (CONTRACT section 16).
 *  - first renders of a 12-megapixel JPEG to 256 px wide, 4 at once, against a bare sharp server
 *    doing the same decode, resize and encode of the same file (bench/baselines/sharp-server.ts);
 *  - a kept variant served, 64 concurrent, against downloads of plain files of the same sizes;
 *  - the service's peak RSS while 16 renders are asked for at once, and the p95 of small downloads
 *    meanwhile (and without renders, beside it).
 * Every render is a first one: each request names a variant no one asked for before (another copy
 * of the file, or another quality), and the baseline gets the same qualities.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import type { Client } from 'undici';
import { fmt } from '../format.js';
import { cannon, closedLoop, newClient } from '../load.js';
import { compare, measure, type Outcome, type Variant } from '../measure.js';
import { memoryOf, resetPeakMemory, startBaseline } from '../processes.js';
import { serviceName, type Context, type ServiceRun, type StoredFile } from './common.js';
import { uploadToService } from './uploads.js';

const RENDER_TITLE = 'First render, 12 MP JPEG to 256 px wide, 4 at once';
const SERVED_TITLE = 'Kept image variant served, 64 concurrent';
const BARE_SHARP = 'bare sharp';
/** Copies of the image in the service: each copy's variants are its own, so every render is a first. */
const COPIES = 16;
const RENDERS_AT_ONCE = 4;
const MEMORY_RENDERS = 16;
const BOUNDARY = '----bench-image-boundary';

async function makePhoto(): Promise<Buffer> {
  // Blurred grain, 4000 × 3000: about the size of a camera's JPEG of that many pixels.
  return sharp({ create: { width: 4000, height: 3000, channels: 3, background: 'black', noise: { type: 'gaussian', mean: 128, sigma: 24 } } })
    .blur(1.2)
    .jpeg({ quality: 90 })
    .toBuffer();
}

async function uploadImage(client: Client, run: ServiceRun, name: string, bytes: Buffer): Promise<number> {
  const { instance } = run;
  const body = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="AccessToken"\r\n\r\n${instance.token}\r\n`),
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="BucketId"\r\n\r\n${instance.bucketId}\r\n`),
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="AliveDays"\r\n\r\n1\r\n`),
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="File"; filename="${name}"\r\nContent-Type: image/jpeg\r\n\r\n`),
    bytes,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
  const response = await client.request({ path: '/API/UploadFile', method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body });
  const json = (await response.body.json()) as { Code: number; FileKey: number };
  if (json.Code !== 0) throw new Error(`UploadFile answered ${JSON.stringify(json)}`);
  return json.FileKey;
}

async function get(client: Client, requestPath: string): Promise<number> {
  const response = await client.request({ path: requestPath, method: 'GET' });
  const bytes = Buffer.from(await response.body.arrayBuffer());
  if (response.statusCode !== 200) throw new Error(`GET ${requestPath}: HTTP ${response.statusCode} ${bytes.toString('utf8', 0, 200)}`);
  return bytes.length;
}

/** Renders/s of `count` requests, `RENDERS_AT_ONCE` in flight, each path asked once. */
function renders(origin: string, nextPath: () => string, count: number): (warmup: boolean) => Promise<Outcome> {
  return async () => {
    const result = await closedLoop({ origin, concurrency: RENDERS_AT_ONCE, durationMs: 600_000, maxOps: count, op: (client) => get(client, nextPath()) });
    if (result.failures > 0) throw new Error(`${result.failures} renders failed: ${result.firstFailure}`);
    return { value: result.ops / result.seconds };
  };
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))] ?? NaN;

/** Latencies (ms) of small downloads, 4 at once, until `until` resolves. */
async function smallDownloads(origin: string, paths: string[], until: Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  let done = false;
  void until.finally(() => (done = true));
  const clients = Array.from({ length: 4 }, () => newClient(origin));
  try {
    await Promise.all(
      clients.map(async (client, worker) => {
        for (let i = worker; !done; i += clients.length) {
          const started = performance.now();
          await get(client, paths[i % paths.length]!);
          latencies.push(performance.now() - started);
        }
      }),
    );
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
  return latencies;
}

export async function images(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const photo = await makePhoto();
  const photoFile = path.join(ctx.uploadDir, 'photo-12mp.jpg');
  await writeFile(photoFile, photo);
  ctx.log(`  images  a ${(photo.length / 1e6).toFixed(1)} MB 12-megapixel JPEG`);
  const bare = await startBaseline(BARE_SHARP, 'sharp-server.js', { IMAGE_FILE: photoFile });
  try {
    for (const run of ctx.services) await imagesOn(ctx, run, photo, bare, opts.runs);
  } finally {
    await bare.child.stop();
  }
}

async function imagesOn(ctx: Context, run: ServiceRun, photo: Buffer, bare: { origin: string; child: { pid: number } }, runs: number): Promise<void> {
  const { instance } = run;
  const client = newClient(instance.origin);
  const keys: number[] = [];
  try {
    for (let copy = 0; copy < COPIES; copy++) keys.push(await uploadImage(client, run, `photo-${instance.bucketId}-${copy}.jpg`, photo));
  } finally {
    await client.close();
  }
  // First renders: copy after copy, then the next quality; the baseline asks for the same qualities.
  // Enough renders that a run lasts a few seconds, not a few hundred milliseconds.
  const perRun = RENDERS_AT_ONCE * (ctx.opts.mode === 'quick' ? 6 : 16);
  let serviceNext = 0;
  let bareNext = 0;
  const quality = (i: number) => 80 - Math.floor(i / COPIES);
  const servicePath = () => {
    const i = serviceNext++;
    return `/Download/FromKey/${keys[i % COPIES]}?w=256&q=${quality(i)}`;
  };
  const barePath = () => `/render?w=256&q=${quality(bareNext++)}`;
  const renderVariants: Variant[] = [
    { name: serviceName(run), pid: instance.child.pid, dbPids: run.dbPids, unit: 'renders/s', run: renders(instance.origin, servicePath, perRun) },
    { name: BARE_SHARP, pid: bare.child.pid, unit: 'renders/s', run: renders(bare.origin, barePath, perRun) },
  ];
  const rendered = await measure(ctx, 'images', renderVariants, runs);
  compare(ctx, { caseId: 'images', title: RENDER_TITLE, db: instance.db, subject: rendered.get(serviceName(run)), baseline: rendered.get(BARE_SHARP), target: 0.8 });

  // Kept variants: 64 thumbnails made once, then served; plain files of the same sizes beside them.
  const thumbs = Array.from({ length: 64 }, (_, i) => `/Download/FromKey/${keys[i % COPIES]}?w=64&q=${90 - Math.floor(i / COPIES)}`);
  const sizes: number[] = [];
  const warm = newClient(instance.origin);
  try {
    for (const thumb of thumbs) sizes.push(await get(warm, thumb));
  } finally {
    await warm.close();
  }
  // Plain files of the very sizes of the variants, each downloaded once so that both sides start from memory.
  const plain: StoredFile[] = [];
  const uploader = newClient(instance.origin);
  try {
    for (const size of sizes) plain.push(await uploadToService(uploader, run, 'kib', size));
    for (const file of plain) await get(uploader, `/Download/FromKey/${file.key}`);
  } finally {
    await uploader.close();
  }
  const sizeRange = `${Math.min(...sizes)}–${Math.max(...sizes)} B`;
  ctx.log(`  images  kept variants of ${sizeRange}, and plain files of the same sizes`);
  const served = (paths: string[]) => async (): Promise<Outcome> => {
    const result = await cannon({ origin: instance.origin, paths, connections: 64, durationSec: Math.max(1, ctx.opts.durationMs / 1000) });
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers and ${result.errors} errors`);
    return { value: result.rps };
  };
  const plainName = `plain download (${instance.db})`;
  const servedVariants: Variant[] = [
    { name: `${serviceName(run)} variant`, pid: instance.child.pid, dbPids: run.dbPids, unit: 'req/s', run: served(thumbs) },
    { name: plainName, pid: instance.child.pid, dbPids: run.dbPids, unit: 'req/s', run: served(plain.map((file) => `/Download/FromKey/${file.key}`)) },
  ];
  const servedMetrics = await measure(ctx, 'images', servedVariants, runs);
  compare(ctx, {
    caseId: 'images',
    title: SERVED_TITLE,
    db: instance.db,
    subject: servedMetrics.get(`${serviceName(run)} variant`),
    baseline: servedMetrics.get(plainName),
    target: 0.9,
    note: `variants and files of ${sizeRange}`,
  });

  // Peak memory and small downloads while 16 first renders are asked for at once, again and again.
  const smallPaths = plain.map((file) => `/Download/FromKey/${file.key}`);
  const quiet = await smallDownloads(instance.origin, smallPaths, new Promise((resolve) => setTimeout(resolve, 3000)));
  const pid = instance.child.pid;
  const before = memoryOf(pid)?.rss ?? NaN;
  const reset = resetPeakMemory(pid);
  let memoryNext = 0;
  const memoryPath = () => {
    const i = memoryNext++;
    return `/Download/FromKey/${keys[i % COPIES]}?w=512&q=${95 - Math.floor(i / COPIES)}`;
  };
  const burst = closedLoop({ origin: instance.origin, concurrency: MEMORY_RENDERS, durationMs: 600_000, maxOps: MEMORY_RENDERS * 3, op: (c) => get(c, memoryPath()) });
  const busy = await smallDownloads(instance.origin, smallPaths, burst);
  const burstResult = await burst;
  const peak = memoryOf(pid)?.hwm ?? NaN;
  const p95Quiet = percentile(quiet, 95);
  const p95Busy = percentile(busy, 95);
  const detail =
    `${burstResult.ops} renders, ${MEMORY_RENDERS} asked at once (${burstResult.failures} failed); RSS ${fmt(before / 1e6, 0)} MB before, ` +
    `peak ${reset ? fmt(peak / 1e6, 0) : '?'} MB; small downloads p95 ${fmt(p95Busy, 0)} ms while rendering (${busy.length} requests), ${fmt(p95Quiet, 0)} ms without`;
  ctx.log(`  images  ${detail}`);
  ctx.checks.push({ name: 'a small download’s p95 under 1 s while renders run', db: instance.db, ok: p95Busy < 1000 && burstResult.failures === 0, detail });
  ctx.findings.push({ title: `Image renders and memory (${instance.db})`, text: detail });
}
