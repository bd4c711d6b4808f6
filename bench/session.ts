/**
 * One run's surroundings: its clock and log, its temp folder, and the cleanup that stops every
 * child and drops every database it made, however the run ends.
 */
import { rmSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Options } from './cases/common.js';
import { killAllNow, refuseNewChildren, type Child } from './processes.js';

export interface Session {
  /** The command as typed, for the results. */
  command: string;
  /** Date.now() at the start. */
  started: number;
  /** 1-minute load average at the start. */
  loadBefore: number;
  temp: string;
  log(line: string): void;
  /** Stopped by close(). */
  children: Child[];
  /** Dropped by close(). */
  databases: Array<{ drop(): Promise<void>; name: string }>;
  /** Stops the children, drops the databases and removes the temp folder. */
  close(): Promise<void>;
}

export async function openSession(mode: Options['mode']): Promise<Session> {
  const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  const started = Date.now();
  const loadBefore = os.loadavg()[0]!;
  const log = (line: string) => process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

  const temp = await mkdtemp(path.join(os.tmpdir(), 'filestore-bench-'));
  // nginx workers may run as another user: they must be able to enter the folder.
  await chmod(temp, 0o755);
  const databases: Session['databases'] = [];
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
  const watchdogMs = (mode === 'quick' ? 5 : 25) * 60_000;
  const watchdog = setTimeout(() => {
    log(`the bench took longer than ${watchdogMs / 60_000} minutes: stopping`);
    refuseNewChildren();
    void cleanup().finally(() => process.exit(1));
  }, watchdogMs);
  watchdog.unref();

  return {
    command,
    started,
    loadBefore,
    temp,
    log,
    children,
    databases,
    close: async () => {
      await cleanup();
      clearTimeout(watchdog);
    },
  };
}
