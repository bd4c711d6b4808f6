import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { createTestDatabase, seedEmbeddedCluster, serverUrl } from './database.js';
import { s3ServiceEnv, testBucketName } from './s3.js';
import { testStorageBackend } from './service.js';

const SERVER_ENTRY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/server.ts');

export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  /** Everything the process printed so far. */
  output(): string;
  /** Signals the process (and its group) and resolves with its exit code once it has exited. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A busy machine (load 10-20 on two cores) may take this long to start a server; a normal one takes a second. */
export const START_DEADLINE_MS = 180_000;
/** After this long a signalled process that has not exited gets SIGKILL. */
const STOP_DEADLINE_MS = 60_000;

/**
 * Every server a test file started and that has not exited. Each runs in its own process group, so
 * a wrapper and the server under it go together; when this test process exits for any reason (the
 * end, a timeout, a crash, the runner's signal), whatever is left is killed.
 */
const running = new Set<ChildProcess>();

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

let cleanupInstalled = false;
function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.once('exit', () => {
    for (const child of running) killGroup(child, 'SIGKILL');
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(signal, () => {
      for (const child of running) killGroup(child, 'SIGKILL');
      process.kill(process.pid, signal);
    });
  }
}

/**
 * Starts the real server entry in its own process, as `npm start` would (through the same
 * TypeScript loader the tests run with), on a free port; resolves once it listens.
 */
export async function startServerProcess(
  env: Record<string, string>,
  wrapper: readonly string[] = [],
  startTimeoutMs = START_DEADLINE_MS,
): Promise<ServerProcess> {
  installCleanup();
  // A wrapper (e.g. unshare) must exec the command it is given, so the child keeps one pid.
  const [command, ...args] = [...wrapper, process.execPath, ...process.execArgv, SERVER_ENTRY];
  const child = spawn(command as string, args, {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, killed whole on teardown.
    detached: true,
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));

  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup(child, 'SIGKILL');
      reject(new Error(`server did not start within ${startTimeoutMs / 1000} s:\n${output}`));
    }, startTimeoutMs);
    const check = () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });

  return {
    child,
    baseUrl,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) {
        killGroup(child, signal);
        const overdue = setTimeout(() => killGroup(child, 'SIGKILL'), STOP_DEADLINE_MS);
        await exited;
        clearTimeout(overdue);
      }
      return child.exitCode;
    },
  };
}

/** Resolves once `condition` holds, checking every `everyMs`; rejects with `what` after `deadlineMs`. */
export async function waitFor(what: string, condition: () => boolean | Promise<boolean>, deadlineMs = 120_000, everyMs = 100): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up after ${deadlineMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export interface ServerData {
  dataDir: string;
  /** The PostgreSQL database the servers use, or undefined for the embedded one under DATA_DIR. */
  databaseUrl: string | undefined;
  /** DATA_DIR, and DATABASE_URL when there is one: what every server process of the test shares. */
  env: Record<string, string>;
}

/**
 * A fresh data folder and database for server processes, removed when the test ends. The embedded
 * server is started by the service itself under DATA_DIR (its cluster seeded from the tests'
 * template, as a first start would make it); PostgreSQL is reached by URL.
 */
export async function serverData(t: Test, prefix: string): Promise<ServerData> {
  const dataDir = await mkdtemp(path.join(tmpdir(), `filestore-${prefix}-`));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  // TEST_STORAGE_BACKEND=s3 (see service.ts): the servers keep their bytes in a bucket of their own.
  const storage = testStorageBackend === 's3' ? s3ServiceEnv(testBucketName(t)) : {};
  if (!serverUrl) {
    await seedEmbeddedCluster(dataDir);
    return { dataDir, databaseUrl: undefined, env: { DATA_DIR: dataDir, ...storage } };
  }
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  if (database.url) await database.handle.close();
  return { dataDir, databaseUrl: database.url, env: { DATA_DIR: dataDir, ...(database.url ? { DATABASE_URL: database.url } : {}), ...storage } };
}
