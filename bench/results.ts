/** What a bench run produces: raw samples, ratios against the baselines, correctness checks. */
import type { DatabaseKind } from './service.js';

export interface Metric {
  caseId: string;
  /** Who was measured: `service (embedded)`, `bare node:http`, `nginx`… */
  variant: string;
  unit: string;
  samples: number[];
  median: number;
  /** CPU the server process used during the measured runs, in cores (1 = one core busy). */
  cores?: number;
  /** Of `cores`, the server's main thread alone: near 1, its event loop is saturated. */
  mainCores?: number;
  /** CPU of the bench process itself (the load generator) meanwhile. */
  clientCores?: number;
  /** PostgreSQL runs: CPU of the database server's processes serving the service. */
  dbCores?: number;
  /** Free text shown beside the numbers, e.g. the MiB/s of a files/s case. */
  extra?: string;
  /** The median of the secondary measure that `extra` shows. */
  secondary?: number;
}

export interface Comparison {
  caseId: string;
  /** The row's title, e.g. `Upload 1 GiB, 1 stream`. */
  title: string;
  db?: DatabaseKind;
  subject: Metric;
  baseline: Metric;
  ratio: number;
  /** Minimum ratio the service should reach; undefined for rows shown for information. */
  target?: number;
  pass?: boolean;
  note?: string;
}

export interface Check {
  name: string;
  db?: DatabaseKind;
  ok: boolean;
  detail: string;
}

export interface MemoryResult {
  db: DatabaseKind;
  title: string;
  /** VmHWM once the fresh process was ready, before the uploads. */
  idleBytes: number;
  /** VmHWM after the uploads: the peak of the whole process life. */
  peakBytes: number;
  limitBytes: number;
  pass: boolean;
  detail: string;
  /** The database server's processes serving the service, beside it (PSS, at the end of the measurement). */
  database?: { bytes: number; processes: number };
}

export interface Finding {
  title: string;
  text: string;
}

export interface Machine {
  cpu: string;
  cores: number;
  memory: string;
  node: string;
  os: string;
  disk: string;
  nginx: string;
  /** Set when the run used a PostgreSQL server. */
  postgres?: string;
}

export interface BenchResults {
  startedAt: string;
  seconds: number;
  mode: 'quick' | 'full';
  command: string;
  dbs: DatabaseKind[];
  machine: Machine;
  /** 1-minute load average before and after the run: above the core count means a busy machine. */
  loadBefore: number;
  loadAfter: number;
  metrics: Metric[];
  comparisons: Comparison[];
  checks: Check[];
  memory: MemoryResult[];
  findings: Finding[];
  skipped: string[];
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
