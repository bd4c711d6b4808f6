/**
 * How every case measures: the service and its baselines in turns (warm-up, then runs in rotating
 * order so that a noisy moment does not fall on one side only), and the ratios between them.
 */
import type { CaseId, Context } from './cases/common.js';
import { fmt, formatValue } from './format.js';
import { cpuSeconds, processCpuSeconds } from './processes.js';
import { median, type Metric } from './results.js';
import type { DatabaseKind } from './service.js';

export interface Outcome {
  value: number;
  secondary?: number;
}

export interface Variant {
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
export async function measure(ctx: Context, caseId: CaseId, variants: Variant[], runs = ctx.opts.runs): Promise<Map<string, Metric>> {
  type Entry = { values: number[]; secondary: number[]; cores: number[]; main: number[]; client: number[]; db: number[] };
  const samples = new Map<string, Entry>();
  for (const variant of variants) {
    samples.set(variant.name, { values: [], secondary: [], cores: [], main: [], client: [], db: [] });
    await variant.prepare?.();
    const outcome = await variant.run(true);
    ctx.log(`  ${caseId}  ${variant.name}  warm-up: ${formatValue(outcome.value, variant.unit)}`);
  }
  for (let round = 0; round < runs; round++) {
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
        `  ${caseId}  ${variant.name}  run ${round + 1}/${runs}: ${formatValue(outcome.value, variant.unit)}` +
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

export function compare(
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
