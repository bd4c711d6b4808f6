/** The command line of `npm run bench`, as described at the top of run.ts. */
import { CASES, type CaseId, type Options } from './cases/common.js';
import { GiB, MiB } from './load.js';
import type { DatabaseKind } from './service.js';

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

export interface Cli {
  opts: Options;
  dbs: DatabaseKind[];
  writeDocs: boolean;
  /** Render a saved results file instead of running. */
  report?: string;
  profile: boolean;
}

function usage(): never {
  process.stdout.write(
    [
      'Usage: npm run bench -- [--quick] [--postgres | --both] [--only=case,…] [--runs=N] [--duration=S] [--profile] [--write-docs]',
      '       npm run bench -- --report=bench/results/latest.json [--write-docs]',
      `Cases: ${CASES.join(', ')}`,
      `PostgreSQL: BENCH_DATABASE_URL (default ${DEFAULT_DATABASE_URL}); the bench creates a database bench_<random> there and drops it after.`,
      '',
    ].join('\n'),
  );
  process.exit(0);
}

export function parseCli(argv: string[]): Cli {
  const flags = new Map<string, string>();
  for (const arg of argv) {
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!match) throw new Error(`Unknown argument: ${arg} (try --help)`);
    flags.set(match[1]!, match[2] ?? '');
  }
  const known = ['quick', 'postgres', 'both', 'only', 'runs', 'duration', 'profile', 'write-docs', 'report', 'help'];
  for (const name of flags.keys()) if (!known.includes(name)) throw new Error(`Unknown flag: --${name} (try --help)`);
  if (flags.has('help')) usage();
  const quick = flags.has('quick');
  const only = flags.get('only');
  const selected = only ? new Set(only.split(',').map((s) => s.trim()).filter(Boolean)) : undefined;
  for (const id of selected ?? []) if (!(CASES as readonly string[]).includes(id)) throw new Error(`Unknown case: ${id}; cases: ${CASES.join(', ')}`);
  const number = (name: string, fallback: number) => {
    const raw = flags.get(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} needs a positive number`);
    return value;
  };
  const opts: Options = {
    mode: quick ? 'quick' : 'full',
    // --quick: two measured runs, so that the whole bench stays within two minutes on two slow cores.
    runs: Math.round(number('runs', quick ? 2 : 3)),
    durationMs: number('duration', quick ? 1 : 3) * 1000,
    warmupMs: quick ? 500 : 1000,
    largeSize: quick ? 256 * MiB : GiB,
    warmLargeSize: quick ? 32 * MiB : 128 * MiB,
    memoryLargeSize: quick ? 512 * MiB : 2 * GiB,
    memorySmallSize: quick ? 64 * MiB : 256 * MiB,
    memorySmallCount: 4,
    kibSample: 200,
    only: selected as ReadonlySet<CaseId> | undefined,
  };
  const dbs: DatabaseKind[] = flags.has('both')
    ? ['embedded', 'postgres']
    : flags.has('postgres') || process.env.BENCH_DATABASE_URL
      ? ['postgres']
      : ['embedded'];
  return { opts, dbs, writeDocs: flags.has('write-docs'), profile: flags.has('profile'), report: flags.get('report') || undefined };
}
