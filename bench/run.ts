/**
 * `npm run bench`: measures the service beside bare baselines on the same machine in the same run
 * and prints the ratios. See docs/benchmarks.md for what each case measures.
 *
 *   --quick          smaller files, shorter runs (about 2 minutes)
 *   --postgres       run the service on PostgreSQL (BENCH_DATABASE_URL, a fresh database per run)
 *   --both           run it on the embedded database and on PostgreSQL, side by side
 *   --only=a,b       only these cases (upload-large, upload-1m, upload-1k, download-large,
 *                    download-1m, download-1k, metadata, memory)
 *   --runs=N         measured runs per case (default 3)
 *   --duration=S     seconds per measured run of the concurrent cases
 *   --profile        run the service under `node --cpu-prof` and summarize where its time went
 *   --write-docs     copy this run's results into docs/benchmarks.md and docs/benchmarks.svg
 *   --report=FILE    run nothing: print a saved results file (bench/results/latest.json) again;
 *                    with --write-docs, copy it into the docs
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, rmSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { findNginx, nginxConfig } from './baselines/nginx.js';
import { CASES, Ledger, wants, type Baselines, type CaseId, type Context, type Options, type ServiceRun, type StaticSet } from './cases/common.js';
import { download1k } from './cases/download-1k.js';
import { download1m } from './cases/download-1m.js';
import { checkCounters } from './cases/download-counter.js';
import { downloadLarge } from './cases/download-large.js';
import { dropExtraLargeFiles } from './cases/free-disk.js';
import { memoryCase } from './cases/memory.js';
import { metadata } from './cases/metadata.js';
import { upload1k } from './cases/upload-1k.js';
import { upload1m } from './cases/upload-1m.js';
import { uploadLarge } from './cases/upload-large.js';
import { verifyUploads } from './cases/verify-uploads.js';
import { fileContent, GiB, KiB, MiB, newSeed } from './load.js';
import { machineInfo } from './machine.js';
import { freePort, isStopping, killAllNow, refuseNewChildren, startBaseline, startChild, waitForHttp, type Child } from './processes.js';
import { profileMarkdown, summarizeProfile } from './profile.js';
import { markdownReport, svgChart, terminalReport, writeDocs } from './report.js';
import type { BenchResults } from './results.js';
import { createBenchDatabase, prepareService, redactUrl, startService, type DatabaseKind, type ServiceSetup } from './service.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const resultsDir = path.join(repoRoot, 'bench', 'results');
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

interface Cli {
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

function parseCli(argv: string[]): Cli {
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
    runs: Math.round(number('runs', 3)),
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

/** The files the baselines serve: one large, 64 of 1 MiB and 64 of 1 KiB, made like the uploads. */
async function writeStaticFiles(dir: string, largeSize: number): Promise<StaticSet> {
  await mkdir(dir, { recursive: true });
  const write = (name: string, size: number) => pipeline(Readable.from(fileContent(newSeed(), size)), createWriteStream(path.join(dir, name)));
  const names = (prefix: string) => Array.from({ length: 64 }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}.bin`);
  const set: StaticSet = { large: 'large.bin', mib: names('m'), kib: names('k') };
  await write(set.large, largeSize);
  for (const name of set.mib) await write(name, MiB);
  for (const name of set.kib) await write(name, KiB);
  return set;
}

/** Prints a saved run again and, with --write-docs, copies it into the docs; runs nothing. */
async function renderSaved(file: string, toDocs: boolean): Promise<number> {
  const results = JSON.parse(await readFile(file, 'utf8')) as BenchResults;
  process.stdout.write(`${terminalReport(results)}\n`);
  if (toDocs) {
    await writeDocs(path.join(repoRoot, 'docs', 'benchmarks.md'), path.join(repoRoot, 'docs', 'benchmarks.svg'), results, 'benchmarks.svg');
    process.stdout.write('docs/benchmarks.md and docs/benchmarks.svg updated\n');
  }
  return 0;
}

async function main(): Promise<number> {
  const cli = parseCli(process.argv.slice(2));
  if (cli.report) return renderSaved(cli.report, cli.writeDocs);
  const { opts } = cli;
  const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  const started = Date.now();
  const loadBefore = os.loadavg()[0]!;
  const log = (line: string) => process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

  const temp = await mkdtemp(path.join(os.tmpdir(), 'filestore-bench-'));
  // nginx workers may run as another user: they must be able to enter the folder.
  await chmod(temp, 0o755);
  const databases: Array<{ drop(): Promise<void>; name: string }> = [];
  const children: Child[] = [];
  let removed = false;
  let cleaning: Promise<void> | undefined;
  // Once, whoever asks first (the end of the run, a signal, the watchdog); the others wait for it.
  const cleanup = () =>
    (cleaning ??= (async () => {
      await Promise.allSettled(children.map((child) => child.stop()));
      killAllNow();
      for (const database of databases) {
        await database.drop().catch((error: Error) => log(`could not drop database ${database.name}: ${error.message}`));
      }
      await rm(temp, { recursive: true, force: true }).catch(() => {});
      removed = true;
    })());
  // However the bench ends: no child left running, no temp data left behind.
  process.once('exit', () => {
    killAllNow();
    if (!removed) rmSync(temp, { recursive: true, force: true });
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping`);
      refuseNewChildren();
      void cleanup().finally(() => process.exit(130));
    });
  }
  const watchdogMs = (opts.mode === 'quick' ? 5 : 25) * 60_000;
  const watchdog = setTimeout(() => {
    log(`the bench took longer than ${watchdogMs / 60_000} minutes: stopping`);
    refuseNewChildren();
    void cleanup().finally(() => process.exit(1));
  }, watchdogMs);
  watchdog.unref();

  const nginxFound = findNginx();
  const machine = await machineInfo(temp, nginxFound ? nginxFound.version : 'not installed');
  log(`${opts.mode} mode, database: ${cli.dbs.join(' + ')}, temp data in ${temp}`);
  log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memory}, Node.js ${machine.node}, load ${loadBefore.toFixed(2)}`);

  const ctxBase = {
    opts,
    metrics: [],
    comparisons: [],
    checks: [],
    findings: [],
    memory: [],
    skipped: [] as string[],
    log: (line: string) => log(line),
  };
  let ctx: Context | undefined;
  let failed = false;
  try {
    const staticDir = path.join(temp, 'static');
    const uploadDir = path.join(temp, 'bare-uploads');
    await mkdir(uploadDir, { recursive: true });
    log('writing the files the baselines serve');
    const staticSet = await writeStaticFiles(staticDir, opts.largeSize);

    const upload = await startBaseline('bare upload server', 'upload-server.js', { BENCH_UPLOAD_DIR: uploadDir });
    const download = await startBaseline('bare download server', 'download-server.js', { BENCH_STATIC_DIR: staticDir });
    const hello = await startBaseline('fastify hello-world', 'hello-server.js', {});
    children.push(upload.child, download.child, hello.child);
    const baselines: Baselines = {
      upload: { name: 'bare node:http', origin: upload.origin, pid: upload.child.pid },
      download: { name: 'bare node:http', origin: download.origin, pid: download.child.pid },
      hello: { name: 'fastify hello-world', origin: hello.origin, pid: hello.child.pid },
    };
    if (nginxFound) {
      const port = await freePort();
      const args = await nginxConfig(path.join(temp, 'nginx'), staticDir, port);
      const nginx = startChild('nginx', nginxFound.binary, args, { PATH: process.env.PATH ?? '' });
      children.push(nginx);
      await waitForHttp(`http://127.0.0.1:${port}/${staticSet.kib[0]}`, nginx, 15_000);
      baselines.nginx = { name: 'nginx sendfile', origin: `http://127.0.0.1:${port}`, pid: nginx.pid };
    } else {
      ctxBase.skipped.push('nginx baseline: nginx not installed');
      log('skipped: nginx not installed');
    }

    const services: ServiceRun[] = [];
    const appSecret = randomBytes(24).toString('hex');
    const profileDir = path.join(resultsDir, 'profiles');
    if (cli.profile) {
      await rm(profileDir, { recursive: true, force: true });
      await mkdir(profileDir, { recursive: true });
    }
    for (const db of cli.dbs) {
      let databaseUrl: string | undefined;
      let dbPids: (() => Promise<number[]>) | undefined;
      if (db === 'postgres') {
        const server = process.env.BENCH_DATABASE_URL || DEFAULT_DATABASE_URL;
        const database = await createBenchDatabase(server);
        databases.push(database);
        databaseUrl = database.url;
        dbPids = () => database.backendPids();
        machine.postgres = `${await database.describe()} at ${redactUrl(server)}`;
        log(`PostgreSQL: database ${database.name}; ${machine.postgres}`);
      }
      const setup: ServiceSetup = {
        db,
        databaseUrl,
        dataDir: path.join(temp, `service-${db}`),
        appId: 'bench-app',
        appSecret,
        cpuProfDir: cli.profile ? profileDir : undefined,
      };
      log(`starting the service (${db}) and the database floor`);
      // Side by side: on the embedded database each initialises its own PGlite, which takes seconds.
      const [started, floor] = await Promise.all([
        startService({ ...setup, cpuProfDir: undefined }),
        startBaseline(`database floor (${db})`, 'db-floor.js', databaseUrl ? { BENCH_DATABASE_URL: databaseUrl } : { BENCH_DATA_DIR: path.join(temp, `floor-${db}`) }),
      ]);
      children.push(floor.child);
      let instance = await prepareService(setup, started);
      if (cli.profile) {
        // Profile the cases, not the creation of a fresh database: restart on the prepared one.
        await instance.child.stop();
        instance = await prepareService(setup, await startService(setup), instance);
      }
      children.push(instance.child);
      services.push({
        instance,
        setup,
        ledger: new Ledger(),
        dbPids,
        floor: { name: `database floor (${db})`, origin: floor.origin, pid: floor.child.pid },
      });
    }

    ctx = { ...ctxBase, services, baselines, staticSet, uploadDir };
    const steps: Array<[CaseId | undefined, string, (c: Context) => Promise<void>]> = [
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
    ];
    for (const [id, name, step] of steps) {
      if (isStopping()) break;
      if (id && !wants(ctx, id)) continue;
      log(`${name}`);
      try {
        await step(ctx);
      } catch (error) {
        if (isStopping()) break;
        failed = true;
        ctx.skipped.push(`${name} failed: ${(error as Error).message.split('\n')[0]}`);
        log(`${name} FAILED: ${(error as Error).stack ?? error}`);
      }
    }
    for (const run of services) {
      await run.instance.child.stop();
      if (cli.profile) await reportProfile(profileDir, run.setup.db, log);
    }
    if (wants(ctx, 'memory')) {
      for (const run of services) {
        if (isStopping()) break;
        log(`memory (${run.setup.db}): fresh service process`);
        try {
          await memoryCase(ctx, run);
        } catch (error) {
          failed = true;
          ctx.skipped.push(`memory (${run.setup.db}) failed: ${(error as Error).message.split('\n')[0]}`);
          log(`memory FAILED: ${(error as Error).stack ?? error}`);
        }
      }
    }
  } finally {
    await cleanup();
    clearTimeout(watchdog);
  }
  // Interrupted: no partial report; the signal's handler exits.
  if (isStopping()) return 130;

  const results: BenchResults = {
    startedAt: new Date(started).toISOString(),
    seconds: (Date.now() - started) / 1000,
    mode: opts.mode,
    command,
    dbs: cli.dbs,
    machine,
    loadBefore,
    loadAfter: os.loadavg()[0]!,
    metrics: ctx?.metrics ?? [],
    comparisons: ctx?.comparisons ?? [],
    checks: ctx?.checks ?? [],
    memory: ctx?.memory ?? [],
    findings: ctx?.findings ?? [],
    skipped: ctx?.skipped ?? ctxBase.skipped,
  };
  process.stdout.write(`\n${terminalReport(results)}\n`);
  await mkdir(resultsDir, { recursive: true });
  await writeFile(path.join(resultsDir, 'latest.json'), JSON.stringify(results, null, 2));
  await writeFile(path.join(resultsDir, 'latest.svg'), svgChart(results));
  await writeFile(path.join(resultsDir, 'latest.md'), `# Benchmark results\n\n${markdownReport(results, 'latest.svg')}`);
  log(`results: ${path.relative(process.cwd(), path.join(resultsDir, 'latest.md'))} (+ latest.json, latest.svg)`);
  if (cli.writeDocs) {
    await writeDocs(path.join(repoRoot, 'docs', 'benchmarks.md'), path.join(repoRoot, 'docs', 'benchmarks.svg'), results, 'benchmarks.svg');
    log('docs/benchmarks.md and docs/benchmarks.svg updated');
  }
  // Misses are results, not failures; a broken case or a wrong byte is.
  return failed || results.checks.some((check) => !check.ok) ? 1 : 0;
}

async function reportProfile(dir: string, db: DatabaseKind, log: (line: string) => void): Promise<void> {
  const name = `service-${db}.cpuprofile`;
  if (!(await readdir(dir)).includes(name)) {
    log(`no CPU profile was written for ${db}`);
    return;
  }
  const summary = await summarizeProfile(path.join(dir, name));
  const markdown = profileMarkdown(`Service CPU profile (${db})`, summary);
  await writeFile(path.join(resultsDir, `profile-${db}.md`), markdown);
  log(`CPU profile (${db}), self time of the main thread:`);
  for (const c of summary.categories.slice(0, 10)) log(`    ${(c.share * 100).toFixed(1).padStart(5)} %  ${c.name}`);
  log(`  top functions:`);
  for (const f of summary.functions.slice(0, 10)) log(`    ${(f.share * 100).toFixed(1).padStart(5)} %  ${f.name}  ${f.where || f.category}`);
  log(`  full summary: bench/results/profile-${db}.md, profile: bench/results/profiles/${name}`);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
