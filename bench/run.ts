/**
 * `npm run bench`: measures the service beside bare baselines on the same machine in the same run
 * and prints the ratios. See docs/benchmarks.md for what each case measures.
 *
 *   --quick          smaller files, shorter runs (about 2 minutes)
 *   --postgres       run the service on PostgreSQL (BENCH_DATABASE_URL, a fresh database per run)
 *   --both           run it on the embedded database and on PostgreSQL, side by side
 *   --only=a,b       only these cases (upload-large, upload-1m, upload-1k, download-large,
 *                    download-1m, download-1k, metadata, data-growth, fair-shares, memory,
 *                    s3-large, resumable-large, images)
 *   --runs=N         measured runs per case (default 3)
 *   --duration=S     seconds per measured run of the concurrent cases
 *   --profile        run the service under `node --cpu-prof` and summarize where its time went
 *   --write-docs     copy this run's results into docs/benchmarks.md and docs/benchmarks.svg
 *   --report=FILE    run nothing: print a saved results file (bench/results/latest.json) again;
 *                    with --write-docs, copy it into the docs
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { findNginx } from './baselines/nginx.js';
import { wants, type CaseId, type Context } from './cases/common.js';
import { download1k } from './cases/download-1k.js';
import { download1m } from './cases/download-1m.js';
import { dataGrowth } from './cases/data-growth.js';
import { fairShares } from './cases/fair-shares.js';
import { checkCounters } from './cases/download-counter.js';
import { downloadLarge } from './cases/download-large.js';
import { images } from './cases/images.js';
import { dropExtraLargeFiles } from './cases/free-disk.js';
import { memoryCase, memoryOverTheRun } from './cases/memory.js';
import { metadata } from './cases/metadata.js';
import { resumableLarge } from './cases/resumable-large.js';
import { s3Large } from './cases/s3-large.js';
import { upload1k } from './cases/upload-1k.js';
import { upload1m } from './cases/upload-1m.js';
import { uploadLarge } from './cases/upload-large.js';
import { verifyUploads } from './cases/verify-uploads.js';
import { parseCli, type Cli } from './cli.js';
import { isStopping, memoryOf, resetPeakMemory } from './processes.js';
import { reportProfile } from './profile.js';
import { copyToDocs, saveResults, terminalReport } from './report.js';
import type { BenchResults, Machine } from './results.js';
import { openSession, type Session } from './session.js';
import { describeMachine, startBaselines, startServices, writeBaselineFiles } from './setup.js';

async function main(): Promise<number> {
  const cli = parseCli(process.argv.slice(2));
  if (cli.report) return renderSaved(cli.report, cli.writeDocs);
  const session = await openSession(cli.opts.mode);
  const nginx = findNginx();
  const machine = await describeMachine(session, cli, nginx);
  let ctx: Context;
  let failed: boolean;
  try {
    const files = await writeBaselineFiles(session, cli.opts.largeSize);
    const skipped: string[] = [];
    const baselines = await startBaselines(session, files, nginx, skipped);
    const services = await startServices(session, cli, machine, files.uploadDir);
    ctx = {
      opts: cli.opts,
      services,
      baselines,
      staticSet: files.staticSet,
      uploadDir: files.uploadDir,
      log: session.log,
      metrics: [],
      comparisons: [],
      checks: [],
      findings: [],
      memory: [],
      skipped,
    };
    failed = await runCases(ctx, cli.profile);
  } finally {
    await session.close();
  }
  // Interrupted: no partial report; the signal's handler exits.
  if (isStopping()) return 130;
  const results = collectResults(session, cli, machine, ctx);
  await report(results, cli.writeDocs, session.log);
  // Misses are results, not failures; a broken case or a wrong byte is.
  return failed || results.checks.some((check) => !check.ok) ? 1 : 0;
}

/** In this order; a step with a case id runs only when that case is wanted. */
const STEPS: Array<[CaseId | undefined, string, (c: Context) => Promise<void>]> = [
  ['upload-large', 'upload-large', uploadLarge],
  ['upload-1m', 'upload-1m', upload1m],
  ['upload-1k', 'upload-1k', upload1k],
  [undefined, 'verify uploads', verifyUploads],
  ['download-large', 'download-large', downloadLarge],
  ['download-1m', 'download-1m', download1m],
  ['download-1k', 'download-1k', download1k],
  [undefined, 'download counter', checkCounters],
  [undefined, 'free disk', dropExtraLargeFiles],
  ['metadata', 'metadata', metadata],
  ['data-growth', 'data-growth', dataGrowth],
  ['fair-shares', 'fair-shares', fairShares],
  ['s3-large', 's3-large', s3Large],
  ['resumable-large', 'resumable-large', resumableLarge],
  ['images', 'images', images],
];

/** Every step, then (on fresh service processes) the memory case; true when one of them failed. */
async function runCases(ctx: Context, profile: boolean): Promise<boolean> {
  let failed = false;
  const ran: string[] = [];
  const fail = (skip: string, name: string, error: unknown) => {
    failed = true;
    ctx.skipped.push(`${skip} failed: ${(error as Error).message.split('\n')[0]}`);
    ctx.log(`${name} FAILED: ${(error as Error).stack ?? error}`);
  };
  for (const [id, name, step] of STEPS) {
    if (isStopping()) break;
    if (id && !wants(ctx, id)) continue;
    ctx.log(`${name}`);
    if (id) ran.push(id);
    const peaksReset = ctx.services.map((run) => resetPeakMemory(run.instance.child.pid));
    try {
      await step(ctx);
    } catch (error) {
      if (isStopping()) break;
      fail(name, name, error);
    }
    ctx.services.forEach((run, i) => {
      const hwm = memoryOf(run.instance.child.pid)?.hwm;
      if (!peaksReset[i] || hwm === undefined) return;
      run.casePeaks.set(name, hwm);
      ctx.log(`  ${name}  service (${run.setup.db}): peak RSS ${(hwm / 1e6).toFixed(0)} MB`);
    });
  }
  for (const run of ctx.services) {
    if (wants(ctx, 'memory') && ran.length > 0) await memoryOverTheRun(ctx, run, ran);
    await run.instance.child.stop();
    if (profile) await reportProfile(run.setup.db, ctx.log);
  }
  if (wants(ctx, 'memory')) {
    for (const run of ctx.services) {
      if (isStopping()) break;
      ctx.log(`memory (${run.setup.db}): fresh service process`);
      try {
        await memoryCase(ctx, run);
      } catch (error) {
        fail(`memory (${run.setup.db})`, 'memory', error);
      }
    }
  }
  return failed;
}

function collectResults(session: Session, cli: Cli, machine: Machine, ctx: Context): BenchResults {
  return {
    startedAt: new Date(session.started).toISOString(),
    seconds: (Date.now() - session.started) / 1000,
    mode: cli.opts.mode,
    command: session.command,
    dbs: cli.dbs,
    machine,
    loadBefore: session.loadBefore,
    loadAfter: os.loadavg()[0]!,
    metrics: ctx.metrics,
    comparisons: ctx.comparisons,
    checks: ctx.checks,
    memory: ctx.memory,
    findings: ctx.findings,
    skipped: ctx.skipped,
  };
}

/** The table on the terminal, the files in bench/results and, with --write-docs, the docs. */
async function report(results: BenchResults, toDocs: boolean, log: (line: string) => void): Promise<void> {
  process.stdout.write(`\n${terminalReport(results)}\n`);
  const page = await saveResults(results);
  log(`results: ${path.relative(process.cwd(), page)} (+ latest.json, latest.svg)`);
  if (toDocs) {
    await copyToDocs(results);
    log('docs/benchmarks.md and docs/benchmarks.svg updated');
  }
}

/** Prints a saved run again and, with --write-docs, copies it into the docs; runs nothing. */
async function renderSaved(file: string, toDocs: boolean): Promise<number> {
  const results = JSON.parse(await readFile(file, 'utf8')) as BenchResults;
  process.stdout.write(`${terminalReport(results)}\n`);
  if (toDocs) {
    await copyToDocs(results);
    process.stdout.write('docs/benchmarks.md and docs/benchmarks.svg updated\n');
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
