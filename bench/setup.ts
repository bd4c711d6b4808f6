/**
 * Before the cases: the machine's description, the files the baselines serve, the baselines
 * themselves, and the service with its database floor on each kind of database.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { findNginx, nginxConfig } from './baselines/nginx.js';
import { Ledger, type Baselines, type ServiceRun, type StaticSet } from './cases/common.js';
import { DEFAULT_DATABASE_URL, type Cli } from './cli.js';
import { fileContent, KiB, MiB, newSeed } from './load.js';
import { machineInfo } from './machine.js';
import { profileDir } from './paths.js';
import { descendantsOf, freePort, memoryOf, startBaseline, startChild, waitForHttp } from './processes.js';
import type { Machine } from './results.js';
import { createBenchDatabase, prepareService, redactUrl, startService, type DatabaseKind, type ServiceSetup } from './service.js';
import type { Session } from './session.js';

type Nginx = ReturnType<typeof findNginx>;

/** The machine the run measures, printed at its start. */
export async function describeMachine(session: Session, cli: Cli, nginx: Nginx): Promise<Machine> {
  const machine = await machineInfo(session.temp, nginx ? nginx.version : 'not installed');
  session.log(`${cli.opts.mode} mode, database: ${cli.dbs.join(' + ')}, temp data in ${session.temp}`);
  session.log(
    `machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memory}, Node.js ${machine.node}, load ${session.loadBefore.toFixed(2)}`,
  );
  return machine;
}

interface BaselineFiles {
  /** What the download baselines serve. */
  staticDir: string;
  staticSet: StaticSet;
  /** Where the bare upload server writes. */
  uploadDir: string;
}

/** The files the baselines serve: one large, 64 of 1 MiB and 64 of 1 KiB, made like the uploads. */
export async function writeBaselineFiles(session: Session, largeSize: number): Promise<BaselineFiles> {
  const staticDir = path.join(session.temp, 'static');
  const uploadDir = path.join(session.temp, 'bare-uploads');
  await mkdir(uploadDir, { recursive: true });
  session.log('writing the files the baselines serve');
  await mkdir(staticDir, { recursive: true });
  const write = (name: string, size: number) => pipeline(Readable.from(fileContent(newSeed(), size)), createWriteStream(path.join(staticDir, name)));
  const names = (prefix: string) => Array.from({ length: 64 }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}.bin`);
  const staticSet: StaticSet = { large: 'large.bin', mib: names('m'), kib: names('k') };
  await write(staticSet.large, largeSize);
  for (const name of staticSet.mib) await write(name, MiB);
  for (const name of staticSet.kib) await write(name, KiB);
  return { staticDir, staticSet, uploadDir };
}

/** The bare servers and, when installed, nginx; what could not start is added to `skipped`. */
export async function startBaselines(session: Session, files: BaselineFiles, nginxFound: Nginx, skipped: string[]): Promise<Baselines> {
  const { staticDir, uploadDir, staticSet } = files;
  const upload = await startBaseline('bare upload server', 'upload-server.js', { BENCH_UPLOAD_DIR: uploadDir });
  const download = await startBaseline('bare download server', 'download-server.js', { BENCH_STATIC_DIR: staticDir });
  const hello = await startBaseline('fastify hello-world', 'hello-server.js', {});
  session.children.push(upload.child, download.child, hello.child);
  const baselines: Baselines = {
    upload: { name: 'bare node:http', origin: upload.origin, pid: upload.child.pid },
    download: { name: 'bare node:http', origin: download.origin, pid: download.child.pid },
    hello: { name: 'fastify hello-world', origin: hello.origin, pid: hello.child.pid },
  };
  if (nginxFound) {
    const port = await freePort();
    const args = await nginxConfig(path.join(session.temp, 'nginx'), staticDir, port);
    const nginx = startChild('nginx', nginxFound.binary, args, { PATH: process.env.PATH ?? '' });
    session.children.push(nginx);
    await waitForHttp(`http://127.0.0.1:${port}/${staticSet.kib[0]}`, nginx, 15_000);
    baselines.nginx = { name: 'nginx sendfile', origin: `http://127.0.0.1:${port}`, pid: nginx.pid };
  } else {
    skipped.push('nginx baseline: nginx not installed');
    session.log('skipped: nginx not installed');
  }
  return baselines;
}

/** The service on each database of the run, each beside its database floor. */
export async function startServices(session: Session, cli: Cli, machine: Machine, uploadDir: string): Promise<ServiceRun[]> {
  const services: ServiceRun[] = [];
  const appSecret = randomBytes(24).toString('hex');
  if (cli.profile) {
    await rm(profileDir, { recursive: true, force: true });
    await mkdir(profileDir, { recursive: true });
  }
  for (const db of cli.dbs) services.push(await startServiceRun(session, cli, machine, db, appSecret, uploadDir));
  return services;
}

async function startServiceRun(session: Session, cli: Cli, machine: Machine, db: DatabaseKind, appSecret: string, uploadDir: string): Promise<ServiceRun> {
  const { log, temp } = session;
  let databaseUrl: string | undefined;
  let dbPids: (() => Promise<number[]>) | undefined;
  if (db === 'postgres') {
    const server = process.env.BENCH_DATABASE_URL || DEFAULT_DATABASE_URL;
    const database = await createBenchDatabase(server);
    session.databases.push(database);
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
  // Side by side: on the embedded database each creates its own cluster (initdb), which takes seconds.
  const [started, floor] = await Promise.all([
    startService({ ...setup, cpuProfDir: undefined }),
    startBaseline(`database floor (${db})`, 'db-floor.js', {
      ...(databaseUrl ? { BENCH_DATABASE_URL: databaseUrl } : { BENCH_DATA_DIR: path.join(temp, `floor-${db}`) }),
      BENCH_FLOOR_STORAGE_DIR: path.join(temp, `floor-${db}-files`),
      // Beside the bare upload server's files, emptied with them at the end of each upload case.
      BENCH_UPLOAD_DIR: uploadDir,
    }),
  ]);
  session.children.push(floor.child);
  let instance = await prepareService(setup, started);
  if (cli.profile) {
    // Profile the cases, not the creation of a fresh database: restart on the prepared one.
    await instance.child.stop();
    instance = await prepareService(setup, await startService(setup), instance);
  }
  session.children.push(instance.child);
  return {
    instance,
    setup,
    ledger: new Ledger(),
    readyHwm: memoryOf(instance.child.pid)?.hwm,
    casePeaks: new Map(),
    // The embedded server's processes are the service's children: their CPU and memory are reported beside it.
    dbPids: dbPids ?? (async () => descendantsOf(instance.child.pid)),
    floor: { name: `database floor (${db})`, origin: floor.origin, pid: floor.child.pid },
  };
}
