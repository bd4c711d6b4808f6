/**
 * The cases: each measures the service and its baselines in turns (warm-up, then runs in rotating
 * order so that a noisy moment does not fall on one side only), and adds its ratios and checks.
 */
import { mkdir, rm } from 'node:fs/promises';
import type { Client } from 'undici';
import {
  callJson,
  cannon,
  closedLoop,
  contentSha256,
  download,
  KiB,
  MiB,
  multipartForm,
  newClient,
  newSeed,
  postForm,
} from './load.js';
import { cpuSeconds, memoryOf, processCpuSeconds } from './processes.js';
import { median, type Check, type Comparison, type Finding, type MemoryResult, type Metric } from './results.js';
import { prepareService, startService, type DatabaseKind, type ServiceInstance, type ServiceSetup } from './service.js';

export interface Options {
  mode: 'quick' | 'full';
  runs: number;
  /** Length of one measured run of the concurrent cases. */
  durationMs: number;
  warmupMs: number;
  largeSize: number;
  warmLargeSize: number;
  memoryLargeSize: number;
  memorySmallSize: number;
  memorySmallCount: number;
  /** How many 1 KiB uploads get their sha256 checked on download. */
  kibSample: number;
  /** Cases to run; undefined → all. */
  only?: ReadonlySet<string>;
}

export const CASES = ['upload-large', 'upload-1m', 'upload-1k', 'download-large', 'download-1m', 'download-1k', 'metadata', 'memory'] as const;
export type CaseId = (typeof CASES)[number];

export interface Endpoint {
  name: string;
  origin: string;
  pid: number;
}

export interface Baselines {
  upload: Endpoint;
  download: Endpoint;
  hello: Endpoint;
  nginx?: Endpoint;
}

/** The files the baselines serve (the same sizes and kind of content as the service's). */
export interface StaticSet {
  large: string;
  mib: string[];
  kib: string[];
}

type FileKind = 'large' | 'mib' | 'kib';

interface StoredFile {
  key: number;
  seed: number;
  size: number;
  /** The InternetPath's path: /<BucketName>/<RealFileName>. */
  path: string;
}

/** What the bench knows about the service's files: what was uploaded and how often it was downloaded. */
export class Ledger {
  readonly files: Record<FileKind, StoredFile[]> = { large: [], mib: [], kib: [] };
  /** Completed downloads per FileKey, counted by the client. */
  readonly downloads = new Map<number, number>();
  /** Downloads counted in bulk over a set of keys (autocannon cycles through them). */
  readonly bulk: Array<{ keys: number[]; count: number }> = [];
  deleted = new Set<number>();

  counted(key: number, times = 1): void {
    this.downloads.set(key, (this.downloads.get(key) ?? 0) + times);
  }
}

export interface ServiceRun {
  instance: ServiceInstance;
  setup: ServiceSetup;
  ledger: Ledger;
  /** PostgreSQL: pids of the server processes serving the service's database. */
  dbPids?: () => Promise<number[]>;
  /** The database work of one upload alone, on the same kind of database (bench/baselines/db-floor.ts). */
  floor?: Endpoint;
}

export interface Context {
  opts: Options;
  services: ServiceRun[];
  baselines: Baselines;
  staticSet: StaticSet;
  uploadDir: string;
  log(line: string): void;
  metrics: Metric[];
  comparisons: Comparison[];
  checks: Check[];
  findings: Finding[];
  memory: MemoryResult[];
  skipped: string[];
}

export const wants = (ctx: Context, id: CaseId): boolean => !ctx.opts.only || ctx.opts.only.has(id);

// ---------------------------------------------------------------------------------------------
// Measuring

interface Outcome {
  value: number;
  secondary?: number;
}

interface Variant {
  name: string;
  /** The server process whose CPU use is recorded. */
  pid: number;
  unit: string;
  secondaryUnit?: string;
  /** PostgreSQL: the server processes serving the service's connections, to record their CPU too. */
  dbPids?: () => Promise<number[]>;
  /** Untimed, before every run (warm-up included), outside the CPU accounting. */
  prepare?(): Promise<void>;
  run(warmup: boolean): Promise<Outcome>;
}

const fmt = (value: number, digits = 0) =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—';

export function formatValue(value: number, unit: string): string {
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${fmt(value, digits)} ${unit}`;
}

/** CPU seconds used so far by several single processes (the database server's backends). */
function cpuOfPids(pids: readonly number[]): Map<number, number> {
  const used = new Map<number, number>();
  for (const pid of pids) {
    const seconds = processCpuSeconds(pid);
    if (seconds !== undefined) used.set(pid, seconds);
  }
  return used;
}

/** Warm-up for every variant, then `runs` rounds in rotating order; medians. */
async function measure(ctx: Context, caseId: CaseId, variants: Variant[]): Promise<Map<string, Metric>> {
  type Entry = { values: number[]; secondary: number[]; cores: number[]; main: number[]; client: number[]; db: number[] };
  const samples = new Map<string, Entry>();
  for (const variant of variants) {
    samples.set(variant.name, { values: [], secondary: [], cores: [], main: [], client: [], db: [] });
    await variant.prepare?.();
    const outcome = await variant.run(true);
    ctx.log(`  ${caseId}  ${variant.name}  warm-up: ${formatValue(outcome.value, variant.unit)}`);
  }
  for (let round = 0; round < ctx.opts.runs; round++) {
    for (let i = 0; i < variants.length; i++) {
      const variant = variants[(i + round) % variants.length]!;
      await variant.prepare?.();
      const dbBefore = variant.dbPids ? cpuOfPids(await variant.dbPids()) : undefined;
      const cpuBefore = cpuSeconds(variant.pid);
      const mainBefore = processCpuSeconds(variant.pid, true);
      const clientBefore = process.cpuUsage();
      const started = performance.now();
      const outcome = await variant.run(false);
      const wall = (performance.now() - started) / 1000;
      const client = process.cpuUsage(clientBefore);
      const cpuAfter = cpuSeconds(variant.pid);
      const mainAfter = processCpuSeconds(variant.pid, true);
      const cores = cpuBefore !== undefined && cpuAfter !== undefined ? (cpuAfter - cpuBefore) / wall : NaN;
      const mainCores = mainBefore !== undefined && mainAfter !== undefined ? (mainAfter - mainBefore) / wall : NaN;
      const clientCores = (client.user + client.system) / 1e6 / wall;
      let dbCores = NaN;
      if (variant.dbPids && dbBefore) {
        // Backends opened during the run started from zero.
        const after = cpuOfPids(await variant.dbPids());
        dbCores = [...after].reduce((sum, [pid, seconds]) => sum + seconds - (dbBefore.get(pid) ?? 0), 0) / wall;
      }
      const entry = samples.get(variant.name)!;
      entry.values.push(outcome.value);
      if (outcome.secondary !== undefined) entry.secondary.push(outcome.secondary);
      entry.cores.push(cores);
      entry.main.push(mainCores);
      entry.client.push(clientCores);
      entry.db.push(dbCores);
      ctx.log(
        `  ${caseId}  ${variant.name}  run ${round + 1}/${ctx.opts.runs}: ${formatValue(outcome.value, variant.unit)}` +
          `${outcome.secondary !== undefined ? ` (${formatValue(outcome.secondary, variant.secondaryUnit ?? '')})` : ''}` +
          ` · CPU in cores: server ${fmt(cores, 2)} (main thread ${fmt(mainCores, 2)})${Number.isFinite(dbCores) ? `, database ${fmt(dbCores, 2)}` : ''}, client ${fmt(clientCores, 2)}`,
      );
    }
  }
  const metrics = new Map<string, Metric>();
  const finiteMedian = (values: number[]) => {
    const finite = values.filter(Number.isFinite);
    return finite.length > 0 ? median(finite) : undefined;
  };
  for (const variant of variants) {
    const entry = samples.get(variant.name)!;
    const metric: Metric = {
      caseId,
      variant: variant.name,
      unit: variant.unit,
      samples: entry.values,
      median: median(entry.values),
      cores: finiteMedian(entry.cores),
      mainCores: finiteMedian(entry.main),
      clientCores: finiteMedian(entry.client),
      dbCores: finiteMedian(entry.db),
      ...(entry.secondary.length > 0
        ? { extra: formatValue(median(entry.secondary), variant.secondaryUnit ?? ''), secondary: median(entry.secondary) }
        : {}),
    };
    metrics.set(variant.name, metric);
    ctx.metrics.push(metric);
  }
  return metrics;
}

function compare(
  ctx: Context,
  input: { caseId: CaseId; title: string; db?: DatabaseKind; subject?: Metric; baseline?: Metric; target?: number; note?: string },
): void {
  const { subject, baseline } = input;
  if (!subject || !baseline) return;
  const ratio = subject.median / baseline.median;
  ctx.comparisons.push({
    caseId: input.caseId,
    title: input.title,
    db: input.db,
    subject,
    baseline,
    ratio,
    target: input.target,
    pass: input.target === undefined ? undefined : ratio >= input.target,
    note: input.note,
  });
}

const serviceName = (run: ServiceRun) => `service (${run.instance.db})`;
const sizeLabel = (bytes: number) => (bytes >= 1024 * MiB ? `${bytes / (1024 * MiB)} GiB` : bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / KiB} KiB`);

// ---------------------------------------------------------------------------------------------
// Uploads

async function uploadToService(client: Client, run: ServiceRun, kind: FileKind, size: number): Promise<StoredFile & { afterLastByteMs?: number }> {
  const { instance } = run;
  const seed = newSeed();
  const form = multipartForm({
    before: { AccessToken: instance.token, BucketId: instance.bucketId },
    after: { AliveDays: 1 },
    fileName: `${kind}-${seed}.bin`,
    size,
  });
  const reply = await postForm(client, '/API/UploadFile', form, seed);
  if (reply.status !== 200 || reply.json.Code !== 0) {
    throw new Error(`UploadFile answered ${reply.status}: ${JSON.stringify(reply.json).slice(0, 300)}`);
  }
  const file = { key: Number(reply.json.FileKey), seed, size, path: new URL(String(reply.json.Path)).pathname };
  run.ledger.files[kind].push(file);
  return { ...file, afterLastByteMs: reply.afterLastByteMs };
}

/** The same multipart body as the service gets (same field lengths), posted to the bare upload server. */
function baselineUploader(ctx: Context) {
  const token = ctx.services[0]?.instance.token ?? 'x'.repeat(43);
  return async (client: Client, size: number, durable: boolean): Promise<{ afterLastByteMs?: number }> => {
    const seed = newSeed();
    const form = multipartForm({
      before: { AccessToken: token, BucketId: 1 },
      after: { AliveDays: 1 },
      fileName: `file-${seed}.bin`,
      size,
    });
    const reply = await postForm(client, `/upload?fsync=${durable ? 1 : 0}`, form, seed);
    if (reply.status !== 200 || reply.json.bytes !== form.length) {
      throw new Error(`bare upload answered ${reply.status}: ${JSON.stringify(reply.json).slice(0, 200)}`);
    }
    return { afterLastByteMs: reply.afterLastByteMs };
  };
}

async function emptyDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
}

export async function uploadLarge(ctx: Context): Promise<void> {
  const { opts, baselines } = ctx;
  const toBaseline = baselineUploader(ctx);
  const single = (origin: string, send: (client: Client, size: number) => Promise<{ afterLastByteMs?: number }>, after?: () => Promise<void>) => {
    return async (warmup: boolean): Promise<Outcome> => {
      const size = warmup ? opts.warmLargeSize : opts.largeSize;
      const client = newClient(origin);
      const started = performance.now();
      let afterLastByteMs: number | undefined;
      try {
        ({ afterLastByteMs } = await send(client, size));
      } finally {
        await client.close();
      }
      const seconds = (performance.now() - started) / 1000;
      await after?.();
      // Secondary: how long the answer took after the last byte (the fsync and commit at the end).
      return { value: size / MiB / seconds, secondary: afterLastByteMs === undefined ? undefined : afterLastByteMs / 1000 };
    };
  };
  const unit = { unit: 'MiB/s', secondaryUnit: 's after the last byte' };
  const variants: Variant[] = [
    ...ctx.services.map((run) => ({
      name: serviceName(run),
      pid: run.instance.child.pid,
      dbPids: run.dbPids,
      ...unit,
      run: single(run.instance.origin, (client, size) => uploadToService(client, run, 'large', size)),
    })),
    {
      name: 'bare node:http',
      pid: baselines.upload.pid,
      ...unit,
      run: single(baselines.upload.origin, (client, size) => toBaseline(client, size, false), () => emptyDir(ctx.uploadDir)),
    },
    {
      name: 'bare node:http + fsync',
      pid: baselines.upload.pid,
      ...unit,
      run: single(baselines.upload.origin, (client, size) => toBaseline(client, size, true), () => emptyDir(ctx.uploadDir)),
    },
  ];
  const metrics = await measure(ctx, 'upload-large', variants);
  const title = `Upload ${sizeLabel(opts.largeSize)}, 1 stream`;
  const bare = metrics.get('bare node:http')!;
  const durable = metrics.get('bare node:http + fsync')!;
  for (const run of ctx.services) {
    const subject = metrics.get(serviceName(run))!;
    compare(ctx, { caseId: 'upload-large', title, db: run.instance.db, subject, baseline: bare, target: 0.85 });
    compare(ctx, { caseId: 'upload-large', title, db: run.instance.db, subject, baseline: durable });
    ctx.findings.push({ title: `Where the ${sizeLabel(opts.largeSize)} upload's time goes (${run.instance.db})`, text: largeUploadSplit(opts.largeSize, subject, bare, durable) });
  }
}

/** Splits an upload's time into receiving the body and finishing after its last byte (fsync, rename, commit). */
function largeUploadSplit(size: number, service: Metric, bare: Metric, durable: Metric): string {
  const split = (m: Metric) => {
    const total = size / MiB / m.median;
    const tail = m.secondary ?? 0;
    return { total, tail, receiving: size / MiB / Math.max(total - tail, 1e-6) };
  };
  const s = split(service);
  const b = split(bare);
  const d = split(durable);
  return (
    `The service takes ${fmt(s.total, 2)} s: ${fmt(s.total - s.tail, 2)} s receiving (${formatValue(s.receiving, 'MiB/s')}; ` +
    `the bare server receives at ${formatValue(b.receiving, 'MiB/s')}) and ${fmt(s.tail, 2)} s after the last byte ` +
    `(fsync, rename, row; the bare server with fsync needs ${fmt(d.tail, 2)} s, without ${fmt(b.tail, 2)} s). ` +
    `Server CPU while uploading: service ${fmt(service.cores ?? NaN, 2)} cores, bare ${fmt(bare.cores ?? NaN, 2)} cores.`
  );
}

async function uploadMany(
  ctx: Context,
  caseId: CaseId,
  kind: FileKind,
  size: number,
  concurrency: number,
  extra: Variant[] = [],
): Promise<Map<string, Metric>> {
  const { opts, baselines } = ctx;
  const toBaseline = baselineUploader(ctx);
  const loop = (origin: string, op: (client: Client) => Promise<unknown>, after?: () => Promise<void>) => {
    return async (warmup: boolean): Promise<Outcome> => {
      const result = await closedLoop({
        origin,
        concurrency,
        durationMs: warmup ? opts.warmupMs : opts.durationMs,
        op: async (client) => {
          await op(client);
          return size;
        },
      });
      await after?.();
      if (result.failures > 0) throw new Error(`${result.failures} uploads failed, first: ${result.firstFailure}`);
      return { value: result.ops / result.seconds, secondary: result.bytes / MiB / result.seconds };
    };
  };
  const variants: Variant[] = [
    ...ctx.services.map((run) => ({
      name: serviceName(run),
      pid: run.instance.child.pid,
      dbPids: run.dbPids,
      unit: 'files/s',
      secondaryUnit: 'MiB/s',
      run: loop(run.instance.origin, (client) => uploadToService(client, run, kind, size)),
    })),
    {
      name: 'bare node:http',
      pid: baselines.upload.pid,
      unit: 'files/s',
      secondaryUnit: 'MiB/s',
      run: loop(baselines.upload.origin, (client) => toBaseline(client, size, false), () => emptyDir(ctx.uploadDir)),
    },
    {
      name: 'bare node:http + fsync',
      pid: baselines.upload.pid,
      unit: 'files/s',
      secondaryUnit: 'MiB/s',
      run: loop(baselines.upload.origin, (client) => toBaseline(client, size, true), () => emptyDir(ctx.uploadDir)),
    },
    ...extra,
  ];
  return measure(ctx, caseId, variants);
}

export async function upload1m(ctx: Context): Promise<void> {
  const metrics = await uploadMany(ctx, 'upload-1m', 'mib', MiB, 8);
  for (const run of ctx.services) {
    const subject = metrics.get(serviceName(run));
    const title = 'Upload 1 MiB files, 8 concurrent';
    compare(ctx, { caseId: 'upload-1m', title, db: run.instance.db, subject, baseline: metrics.get('bare node:http') });
    compare(ctx, { caseId: 'upload-1m', title, db: run.instance.db, subject, baseline: metrics.get('bare node:http + fsync') });
  }
}

const floorName = (run: ServiceRun) => `database work only (${run.instance.db})`;

export async function upload1k(ctx: Context): Promise<void> {
  const { opts } = ctx;
  // Beside the uploads: the database work of one upload alone, on each kind of database.
  const floors: Variant[] = ctx.services.flatMap((run) => {
    const floor = run.floor;
    if (!floor) return [];
    return [
      {
        name: floorName(run),
        pid: floor.pid,
        dbPids: run.dbPids,
        unit: 'files/s',
        run: async (warmup: boolean): Promise<Outcome> => {
          const result = await closedLoop({
            origin: floor.origin,
            concurrency: 32,
            durationMs: warmup ? opts.warmupMs : opts.durationMs,
            op: async (client) => {
              const response = await client.request({ path: '/commit', method: 'POST' });
              const text = await response.body.text();
              if (response.statusCode !== 200) throw new Error(`database floor answered ${response.statusCode}: ${text.slice(0, 200)}`);
              return 0;
            },
          });
          if (result.failures > 0) throw new Error(`${result.failures} commits failed, first: ${result.firstFailure}`);
          return { value: result.ops / result.seconds };
        },
      },
    ];
  });
  const metrics = await uploadMany(ctx, 'upload-1k', 'kib', KiB, 32, floors);
  const bare = metrics.get('bare node:http')!;
  const durable = metrics.get('bare node:http + fsync')!;
  for (const run of ctx.services) {
    const subject = metrics.get(serviceName(run))!;
    const floor = metrics.get(floorName(run));
    const db = run.instance.db;
    const title = 'Upload 1 KiB files, 32 concurrent';
    compare(ctx, { caseId: 'upload-1k', title, db, subject, baseline: bare });
    compare(ctx, { caseId: 'upload-1k', title, db, subject, baseline: durable });
    compare(ctx, { caseId: 'upload-1k', title, db, subject, baseline: floor });
    ctx.findings.push({ title: `What limits 1 KiB uploads (${db})`, text: smallUploadReason(subject, bare, durable, floor, db, 32) });
  }
}

/**
 * Separates the cost of durability (the fsync baseline) and of the database (the database floor)
 * from the service's own work, using how busy the service's main thread (its event loop) was.
 */
function smallUploadReason(
  service: Metric,
  bare: Metric,
  durable: Metric,
  floor: Metric | undefined,
  db: DatabaseKind,
  concurrency: number,
): string {
  const ofDurable = service.median / durable.median;
  const ofFloor = floor ? service.median / floor.median : NaN;
  const cores = service.cores ?? NaN;
  const main = service.mainCores ?? NaN;
  const perFile = (value: number) => fmt((value * 1000) / service.median, 2);
  const facts =
    `${formatValue(service.median, 'files/s')}: ${fmt(ofDurable * 100)} % of a bare server that fsyncs and renames each file ` +
    `(${formatValue(durable.median, 'files/s')}), ${fmt((service.median / bare.median) * 100)} % of one that does not ` +
    `(${formatValue(bare.median, 'files/s')})` +
    (floor ? `, ${fmt(ofFloor * 100)} % of the database work of an upload done alone (${formatValue(floor.median, 'files/s')})` : '') +
    `. With ${concurrency} in flight each upload took ${fmt((concurrency * 1000) / service.median)} ms ` +
    `(bare with fsync: ${fmt((concurrency * 1000) / durable.median)} ms). Per file the service used ${perFile(main)} ms of CPU on its main thread and ` +
    `${perFile(cores - main)} ms on other threads (file system calls, GC)` +
    `${service.dbCores !== undefined ? `, the database server ${perFile(service.dbCores)} ms` : ''}` +
    `; the bare server with fsync ${fmt(((durable.cores ?? NaN) * 1000) / durable.median, 2)} ms in all.`;
  let reason: string;
  if (ofDurable >= 0.8) {
    reason = 'Limit: durability. The fsync and rename of each file set the pace; the service adds little on top.';
  } else if (ofFloor >= 0.7) {
    reason =
      `Limit: the database. Its work for one upload (token and bucket lookups, the insert and its commit) done alone ` +
      `reaches only ${formatValue(floor!.median, 'files/s')}${db === 'embedded' ? ', on the embedded database’s single connection in the service’s own thread' : ''}.`;
  } else if (main >= 0.8) {
    reason =
      `Limit: the service's main thread (${fmt(main, 2)} cores busy) beyond the database: durability alone would allow ` +
      `${formatValue(durable.median, 'files/s')}${floor ? ` and the database ${formatValue(floor.median, 'files/s')}` : ''}; the rest is ` +
      'request handling, multipart parsing, validation and the file steps of each upload. Run with --profile to see where.';
  } else {
    reason =
      `Limit: neither the fsync floor${floor ? ' nor the database floor' : ''}, and the main thread was not saturated ` +
      `(${fmt(main, 2)} cores): each upload waits through a long chain of serial steps (file system calls on the thread ` +
      'pool, database round trips), or the machine had no core to spare (see the load average).';
  }
  return `${facts} ${reason}`;
}

// ---------------------------------------------------------------------------------------------
// Correctness of what was uploaded

/** Downloads every large and 1 MiB upload and a sample of the 1 KiB ones, and checks their sha256. */
export async function verifyUploads(ctx: Context): Promise<void> {
  for (const run of ctx.services) {
    const { ledger, instance } = run;
    const kib = sample(ledger.files.kib, ctx.opts.kibSample);
    const jobs: Array<{ file: StoredFile; path: string }> = [
      ...ledger.files.large.map((file) => ({ file, path: `/Download/FromKey/${file.key}` })),
      // The 1 MiB files by their InternetPath, the others by key: both routes are checked.
      ...ledger.files.mib.map((file) => ({ file, path: file.path })),
      ...kib.map((file) => ({ file, path: `/Download/FromKey/${file.key}` })),
    ];
    if (jobs.length === 0) continue;
    let ok = 0;
    const bad: string[] = [];
    let next = 0;
    const worker = async () => {
      const client = newClient(instance.origin);
      try {
        while (next < jobs.length) {
          const { file, path } = jobs[next++]!;
          const reply = await download(client, path, { hash: true });
          if (reply.status === 200) ledger.counted(file.key);
          if (reply.status === 200 && reply.sha256 === contentSha256(file.seed, file.size)) ok++;
          else bad.push(`${path}: HTTP ${reply.status}, ${reply.bytes} bytes`);
        }
      } finally {
        await client.close();
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    const counts = `${ledger.files.large.length} large, ${ledger.files.mib.length} of 1 MiB, ${kib.length} of ${ledger.files.kib.length} of 1 KiB`;
    ctx.checks.push({
      name: 'sha256 of uploads, checked on download',
      db: instance.db,
      ok: bad.length === 0,
      detail: bad.length === 0 ? `${ok} files match (${counts})` : `${bad.length} of ${jobs.length} differ, e.g. ${bad.slice(0, 3).join('; ')}`,
    });
    ctx.log(`  verify  ${serviceName(run)}: ${ok}/${jobs.length} sha256 match`);
  }
}

function sample<T>(items: readonly T[], count: number): T[] {
  if (items.length <= count) return [...items];
  const step = items.length / count;
  return Array.from({ length: count }, (_, i) => items[Math.floor(i * step)]!);
}

/** Makes sure the service holds `count` files of a kind (when the upload cases were left out). */
async function ensureFiles(run: ServiceRun, kind: FileKind, size: number, count: number): Promise<StoredFile[]> {
  const have = () => run.ledger.files[kind].filter((file) => file.size === size && !run.ledger.deleted.has(file.key));
  let missing = count - have().length;
  if (missing > 0) {
    await Promise.all(
      Array.from({ length: Math.min(4, missing) }, async () => {
        const client = newClient(run.instance.origin);
        try {
          while (missing-- > 0) await uploadToService(client, run, kind, size);
        } finally {
          await client.close();
        }
      }),
    );
  }
  return have().slice(0, count);
}

// ---------------------------------------------------------------------------------------------
// Downloads

const SET_SIZE = 64;

function staticVariants(ctx: Context, make: (endpoint: Endpoint) => Variant): Variant[] {
  const { download, nginx } = ctx.baselines;
  return [make(download), ...(nginx ? [make(nginx)] : [])];
}

async function prepareDownloads(ctx: Context, kind: FileKind, size: number, count: number): Promise<Map<ServiceRun, StoredFile[]>> {
  const sets = new Map<ServiceRun, StoredFile[]>();
  for (const run of ctx.services) sets.set(run, await ensureFiles(run, kind, size, count));
  return sets;
}

/**
 * Reads every file of a set once, untimed, so that each run starts from the page cache. Some
 * machines evict idle page cache within seconds (e.g. a VM under DAMON-based reclaim); without
 * this, a run would measure the disk or the cache depending on when the file was last read.
 */
function warmCache(origin: string, paths: readonly string[], onDone?: (index: number) => void): () => Promise<void> {
  return async () => {
    const client = newClient(origin);
    try {
      for (let index = 0; index < paths.length; index++) {
        const reply = await download(client, paths[index]!);
        if (reply.status !== 200) throw new Error(`GET ${paths[index]}: HTTP ${reply.status}`);
        onDone?.(index);
      }
    } finally {
      await client.close();
    }
  };
}

function downloadComparisons(ctx: Context, caseId: CaseId, title: string, metrics: Map<string, Metric>, target?: number, note?: string): void {
  for (const run of ctx.services) {
    const subject = metrics.get(serviceName(run));
    compare(ctx, { caseId, title, db: run.instance.db, subject, baseline: metrics.get(ctx.baselines.download.name), target, note });
    if (ctx.baselines.nginx) compare(ctx, { caseId, title, db: run.instance.db, subject, baseline: metrics.get(ctx.baselines.nginx.name) });
  }
}

export async function downloadLarge(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const sets = await prepareDownloads(ctx, 'large', opts.largeSize, 1);
  const single = (origin: string, path: string, onDone?: () => void) => async (): Promise<Outcome> => {
    const client = newClient(origin);
    const started = performance.now();
    try {
      const reply = await download(client, path);
      if (reply.status !== 200 || reply.bytes !== opts.largeSize) throw new Error(`GET ${path}: HTTP ${reply.status}, ${reply.bytes} bytes`);
      onDone?.();
    } finally {
      await client.close();
    }
    return { value: opts.largeSize / MiB / ((performance.now() - started) / 1000) };
  };
  const variants: Variant[] = [
    ...[...sets].map(([run, [file]]) => ({
      name: serviceName(run),
      pid: run.instance.child.pid,
      dbPids: run.dbPids,
      unit: 'MiB/s',
      prepare: warmCache(run.instance.origin, [`/Download/FromKey/${file!.key}`], () => run.ledger.counted(file!.key)),
      run: single(run.instance.origin, `/Download/FromKey/${file!.key}`, () => run.ledger.counted(file!.key)),
    })),
    ...staticVariants(ctx, (endpoint) => ({
      name: endpoint.name,
      pid: endpoint.pid,
      unit: 'MiB/s',
      prepare: warmCache(endpoint.origin, [`/${ctx.staticSet.large}`]),
      run: single(endpoint.origin, `/${ctx.staticSet.large}`),
    })),
  ];
  const metrics = await measure(ctx, 'download-large', variants);
  downloadComparisons(ctx, 'download-large', `Download ${sizeLabel(opts.largeSize)}, 1 stream`, metrics, 0.9);
}

export async function download1m(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const sets = await prepareDownloads(ctx, 'mib', MiB, SET_SIZE);
  const loop = (origin: string, paths: string[], onDone?: (index: number) => void) => async (warmup: boolean): Promise<Outcome> => {
    let next = 0;
    const result = await closedLoop({
      origin,
      concurrency: 8,
      durationMs: warmup ? opts.warmupMs : opts.durationMs,
      op: async (client) => {
        const index = next++ % paths.length;
        const reply = await download(client, paths[index]!);
        if (reply.status !== 200 || reply.bytes !== MiB) throw new Error(`GET ${paths[index]}: HTTP ${reply.status}, ${reply.bytes} bytes`);
        onDone?.(index);
        return reply.bytes;
      },
    });
    if (result.failures > 0) throw new Error(`${result.failures} downloads failed, first: ${result.firstFailure}`);
    return { value: result.ops / result.seconds, secondary: result.bytes / MiB / result.seconds };
  };
  const variants: Variant[] = [
    ...[...sets].map(([run, files]) => ({
      name: serviceName(run),
      pid: run.instance.child.pid,
      dbPids: run.dbPids,
      unit: 'files/s',
      secondaryUnit: 'MiB/s',
      // By InternetPath: /<BucketName>/<RealFileName>.
      prepare: warmCache(run.instance.origin, files.map((file) => file.path), (index) => run.ledger.counted(files[index]!.key)),
      run: loop(run.instance.origin, files.map((file) => file.path), (index) => run.ledger.counted(files[index]!.key)),
    })),
    ...staticVariants(ctx, (endpoint) => ({
      name: endpoint.name,
      pid: endpoint.pid,
      unit: 'files/s',
      secondaryUnit: 'MiB/s',
      prepare: warmCache(endpoint.origin, ctx.staticSet.mib.map((name) => `/${name}`)),
      run: loop(endpoint.origin, ctx.staticSet.mib.map((name) => `/${name}`)),
    })),
  ];
  const metrics = await measure(ctx, 'download-1m', variants);
  downloadComparisons(ctx, 'download-1m', 'Download 1 MiB files, 8 concurrent', metrics);
}

export async function download1k(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const sets = await prepareDownloads(ctx, 'kib', KiB, SET_SIZE);
  const warmAmount = opts.mode === 'quick' ? 2_000 : 5_000;
  const burst = (origin: string, paths: string[], keys?: number[]) => {
    let rate = 0;
    return async (warmup: boolean): Promise<Outcome> => {
      // A fixed number of requests, sized from the warm-up's rate: every response completes, so the
      // service's download counter can be checked against an exact total.
      const amount = warmup ? warmAmount : Math.max(1_000, Math.round((rate * opts.durationMs) / 1000));
      const result = await cannon({ origin, paths, connections: 64, amount });
      if (keys) ctx.services.find((run) => run.instance.origin === origin)!.ledger.bulk.push({ keys, count: result.ok });
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers and ${result.errors} errors`);
      if (warmup) rate = result.rps;
      return { value: result.rps };
    };
  };
  const variants: Variant[] = [
    ...[...sets].map(([run, files]) => ({
      name: serviceName(run),
      pid: run.instance.child.pid,
      dbPids: run.dbPids,
      unit: 'req/s',
      prepare: warmCache(run.instance.origin, files.map((file) => `/Download/FromKey/${file.key}`), (index) => run.ledger.counted(files[index]!.key)),
      run: burst(run.instance.origin, files.map((file) => `/Download/FromKey/${file.key}`), files.map((file) => file.key)),
    })),
    ...staticVariants(ctx, (endpoint) => ({
      name: endpoint.name,
      pid: endpoint.pid,
      unit: 'req/s',
      prepare: warmCache(endpoint.origin, ctx.staticSet.kib.map((name) => `/${name}`)),
      run: burst(endpoint.origin, ctx.staticSet.kib.map((name) => `/${name}`)),
    })),
  ];
  const metrics = await measure(ctx, 'download-1k', variants);
  downloadComparisons(ctx, 'download-1k', 'Download 1 KiB files, 64 concurrent', metrics, 0.6, 'download counter on');
}

/** After the flush interval, DownloadTimes must equal the downloads the client completed. */
export async function checkCounters(ctx: Context): Promise<void> {
  const runs = ctx.services.filter((run) => run.ledger.downloads.size > 0 || run.ledger.bulk.length > 0);
  if (runs.length === 0) return;
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  for (const run of runs) {
    const { ledger, instance } = run;
    const keys = [...new Set([...ledger.downloads.keys(), ...ledger.bulk.flatMap((entry) => entry.keys)])];
    const seen = new Map<number, number>();
    for (let i = 0; i < keys.length; i += 500) {
      const ids = keys.slice(i, i + 500).join(',');
      const reply = await callJson(instance.origin, `/API/ViewMultiFiles?Ids=${ids}`);
      for (const item of (reply.json.Items as Array<{ FileKey: number; DownloadTimes: number }> | undefined) ?? []) {
        seen.set(item.FileKey, item.DownloadTimes);
      }
    }
    const bulkKeys = new Set(ledger.bulk.flatMap((entry) => entry.keys));
    const wrong: string[] = [];
    let expectedTotal = 0;
    // Keys downloaded only one by one: exact per file.
    for (const [key, count] of ledger.downloads) {
      expectedTotal += count;
      if (!bulkKeys.has(key) && seen.get(key) !== count) wrong.push(`FileKey ${key}: ${seen.get(key)} counted, ${count} completed`);
    }
    // Keys autocannon cycled through: exact over the set.
    const bulkExpected =
      ledger.bulk.reduce((sum, entry) => sum + entry.count, 0) +
      [...bulkKeys].reduce((sum, key) => sum + (ledger.downloads.get(key) ?? 0), 0);
    const bulkSeen = [...bulkKeys].reduce((sum, key) => sum + (seen.get(key) ?? 0), 0);
    if (bulkSeen !== bulkExpected) wrong.push(`1 KiB set: ${bulkSeen} counted, ${bulkExpected} completed`);
    expectedTotal += ledger.bulk.reduce((sum, entry) => sum + entry.count, 0);
    ctx.checks.push({
      name: 'DownloadTimes equals completed downloads (after 1.5 s)',
      db: instance.db,
      ok: wrong.length === 0,
      detail: wrong.length === 0 ? `${fmt(expectedTotal)} downloads over ${keys.length} files` : wrong.slice(0, 3).join('; '),
    });
    ctx.log(`  counter  ${serviceName(run)}: ${wrong.length === 0 ? 'ok' : wrong.slice(0, 3).join('; ')}`);
  }
}

/** Deletes the large uploads no later case needs. */
export async function dropExtraLargeFiles(ctx: Context): Promise<void> {
  for (const run of ctx.services) {
    const keep = run.ledger.files.large.filter((file) => file.size === ctx.opts.largeSize).at(-1);
    for (const file of run.ledger.files.large) {
      if (file === keep || run.ledger.deleted.has(file.key)) continue;
      const reply = await callJson(run.instance.origin, '/API/DeleteFile', { AccessToken: run.instance.token, FileKey: file.key });
      if (reply.json.Code === 0) run.ledger.deleted.add(file.key);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Metadata

export async function metadata(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const variants: Variant[] = [];
  const timed = (origin: string, paths: string[]) => async (warmup: boolean): Promise<Outcome> => {
    const result = await cannon({ origin, paths, connections: 32, durationSec: (warmup ? opts.warmupMs : opts.durationMs) / 1000 });
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers and ${result.errors} errors`);
    return { value: result.rps };
  };
  for (const run of ctx.services) {
    const files = await ensureFiles(run, 'kib', KiB, 100);
    const keys = files.map((file) => file.key);
    // One key per connection (autocannon gives connection i the path i).
    const one = keys.slice(0, 32).map((key) => `/API/ViewOneFile?FileKey=${key}`);
    const multi = [0, 10, 20, 30, 40, 50].map((offset) => `/API/ViewMultiFiles?Ids=${keys.slice(offset, offset + 50).join(',')}`);
    // Answers are HTTP 200 whatever the Code: check one of each before timing them.
    const probeOne = await callJson(run.instance.origin, one[0]!);
    const probeMulti = await callJson(run.instance.origin, multi[0]!);
    const items = (probeMulti.json.Items as unknown[] | undefined)?.length;
    if (probeOne.json.Code !== 0 || probeMulti.json.Code !== 0 || items !== 50) {
      throw new Error(`metadata probe failed: ${JSON.stringify(probeOne.json).slice(0, 200)} / ${items} items`);
    }
    const pid = run.instance.child.pid;
    const dbPids = run.dbPids;
    variants.push(
      { name: `${serviceName(run)} ViewOneFile`, pid, dbPids, unit: 'req/s', run: timed(run.instance.origin, one) },
      { name: `${serviceName(run)} ViewMultiFiles`, pid, dbPids, unit: 'req/s', run: timed(run.instance.origin, multi) },
    );
  }
  const hello = ctx.baselines.hello;
  variants.push({ name: hello.name, pid: hello.pid, unit: 'req/s', run: timed(hello.origin, ['/']) });
  const metrics = await measure(ctx, 'metadata', variants);
  for (const run of ctx.services) {
    const db = run.instance.db;
    const baseline = metrics.get(hello.name);
    compare(ctx, { caseId: 'metadata', title: 'ViewOneFile, 32 concurrent', db, subject: metrics.get(`${serviceName(run)} ViewOneFile`), baseline, target: 0.4 });
    compare(ctx, { caseId: 'metadata', title: 'ViewMultiFiles (50 ids), 32 concurrent', db, subject: metrics.get(`${serviceName(run)} ViewMultiFiles`), baseline });
  }
}

// ---------------------------------------------------------------------------------------------
// Memory

const MEMORY_LIMIT = 200 * 1000 * 1000;

/** A fresh service process; its peak RSS (VmHWM) while one large and several medium files upload at once. */
export async function memoryCase(ctx: Context, run: ServiceRun): Promise<void> {
  const { opts } = ctx;
  const db = run.setup.db;
  const title = `Peak RSS, ${sizeLabel(opts.memoryLargeSize)} + ${opts.memorySmallCount} × ${sizeLabel(opts.memorySmallSize)} uploads at once`;
  const started = await startService({ ...run.setup, cpuProfDir: undefined });
  try {
    const instance = await prepareService(run.setup, started, { bucketId: run.instance.bucketId, bucketName: run.instance.bucketName });
    const fresh: ServiceRun = { ...run, instance };
    const idle = memoryOf(started.child.pid);
    let sampledPeak = 0;
    const timer = setInterval(() => {
      sampledPeak = Math.max(sampledPeak, memoryOf(started.child.pid)?.rss ?? 0);
    }, 100);
    const sizes = [opts.memoryLargeSize, ...Array.from({ length: opts.memorySmallCount }, () => opts.memorySmallSize)];
    const t0 = performance.now();
    let files: StoredFile[];
    try {
      files = await Promise.all(
        sizes.map(async (size) => {
          const client = newClient(instance.origin);
          try {
            return await uploadToService(client, fresh, 'large', size);
          } finally {
            await client.close();
          }
        }),
      );
    } finally {
      clearInterval(timer);
    }
    const seconds = (performance.now() - t0) / 1000;
    const after = memoryOf(started.child.pid);
    const view = await callJson(instance.origin, `/API/ViewMultiFiles?Ids=${files.map((file) => file.key).join(',')}`);
    const stored = (view.json.Items as Array<{ FileKey: number; JFileSize: number }> | undefined) ?? [];
    const sizesOk = files.every((file) => stored.find((item) => item.FileKey === file.key)?.JFileSize === file.size);
    ctx.checks.push({
      name: 'memory case: every upload stored with its size',
      db,
      ok: sizesOk,
      detail: sizesOk ? `${files.length} files, ${sizeLabel(sizes.reduce((a, b) => a + b, 0))} in ${fmt(seconds, 1)} s` : JSON.stringify(stored).slice(0, 200),
    });
    const peak = after?.hwm ?? NaN;
    ctx.memory.push({
      db,
      title,
      idleBytes: idle?.hwm ?? NaN,
      peakBytes: peak,
      limitBytes: MEMORY_LIMIT,
      pass: peak < MEMORY_LIMIT,
      detail: `VmHWM ${fmt((idle?.hwm ?? NaN) / 1e6)} MB when ready, ${fmt(peak / 1e6)} MB after the uploads (sampled VmRSS peak ${fmt(sampledPeak / 1e6)} MB)`,
    });
    ctx.log(`  memory  service (${db}): ready ${fmt((idle?.hwm ?? NaN) / 1e6)} MB, peak ${fmt(peak / 1e6)} MB`);
    // Free the disk at once: several GiB.
    for (const file of files) {
      await callJson(instance.origin, '/API/DeleteFile', { AccessToken: instance.token, FileKey: file.key });
    }
  } finally {
    await started.child.stop();
  }
}
