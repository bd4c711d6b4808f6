/** What every case works with: the run's options, the services and baselines, and what was stored. */
import type { Check, Comparison, Finding, MemoryResult, Metric } from '../results.js';
import type { ServiceInstance, ServiceSetup } from '../service.js';

/** The service process's peak RSS at any file size and any concurrency within its configured budgets. */
export const MEMORY_LIMIT = 200 * 1000 * 1000;

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

export const CASES = ['upload-large', 'upload-1m', 'upload-1k', 'download-large', 'download-1m', 'download-1k', 'metadata', 'data-growth', 'fair-shares', 'memory', 's3-large', 'resumable-large', 'images'] as const;
export type CaseId = (typeof CASES)[number];

interface Endpoint {
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

export type FileKind = 'large' | 'mib' | 'kib';

export interface StoredFile {
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
  /** The service's VmHWM once it was ready, before any case. */
  readyHwm?: number;
  /** The service's peak RSS during each case that ran, where the kernel lets the peak be reset between cases. */
  casePeaks: Map<string, number>;
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

export const serviceName = (run: ServiceRun) => `service (${run.instance.db})`;
