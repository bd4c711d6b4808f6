import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { createTestDatabase } from './database.js';

const SERVER_ENTRY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/server.ts');

export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  /** Everything the process printed so far. */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts the real server entry in its own process, as `npm start` would (through the same
 * TypeScript loader the tests run with), on a free port; resolves once it listens.
 */
export async function startServerProcess(env: Record<string, string>, wrapper: readonly string[] = []): Promise<ServerProcess> {
  // A wrapper (e.g. unshare) must exec the command it is given, so the child keeps one pid.
  const [command, ...args] = [...wrapper, process.execPath, ...process.execArgv, SERVER_ENTRY];
  const child = spawn(command as string, args, {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));

  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 60_000);
    const check = () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });

  return {
    child,
    baseUrl,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = await once(child, 'exit');
      return code as number | null;
    },
  };
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
 * database is opened by the server itself (under DATA_DIR); PostgreSQL is reached by URL.
 */
export async function serverData(t: Test, prefix: string): Promise<ServerData> {
  const dataDir = await mkdtemp(path.join(tmpdir(), `filestore-${prefix}-`));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  if (database.url) await database.handle.close();
  return { dataDir, databaseUrl: database.url, env: { DATA_DIR: dataDir, ...(database.url ? { DATABASE_URL: database.url } : {}) } };
}
