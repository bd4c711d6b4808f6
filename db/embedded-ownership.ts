import { readFileSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Who may run on a DATA_DIR: one service at a time (its pid in DATA_DIR/postgres.owner), and a
 * PostgreSQL server left behind by a service killed with kill -9 is stopped before a new start.
 */

export class EmbeddedServerError extends Error {
  override name = 'EmbeddedServerError';
}

export interface EmbeddedServerLog {
  info(message: string): void;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // An exited server whose adoptive parent has not reaped it yet (a zombie) still answers signals.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

async function untilGone(pid: number, timeoutMs: number): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
    if (!alive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return !alive(pid);
}

/** Is `pid` a Node.js process other than this one (another service), as far as this platform tells? */
async function isAnotherService(pid: number): Promise<boolean> {
  if (pid === process.pid || !alive(pid)) return false;
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return /node/.test(cmdline.split('\0')[0] ?? '');
  } catch {
    // No /proc (macOS): trust that the process is alive.
    return true;
  }
}

/**
 * One service per DATA_DIR: its pid in DATA_DIR/postgres.owner. A file left by a service that no
 * longer runs (killed with kill -9) is taken over; one of a running service stops this start.
 */
export async function claimDataDir(dataDir: string): Promise<() => Promise<void>> {
  const ownerFile = path.join(dataDir, 'postgres.owner');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(ownerFile, `${process.pid}\n`, { flag: 'wx' });
      return () => rm(ownerFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = Number.parseInt(await readFile(ownerFile, 'utf8').catch(() => ''), 10);
    if (Number.isSafeInteger(owner) && (await isAnotherService(owner))) {
      throw new EmbeddedServerError(
        `Another instance of the service (process ${owner}) is already running on DATA_DIR ${dataDir}. ` +
          'Stop it first, or give this one its own DATA_DIR (several instances share one database through DATABASE_URL).',
      );
    }
    await rm(ownerFile, { force: true });
  }
  throw new EmbeddedServerError(`Another instance of the service is starting on DATA_DIR ${dataDir}.`);
}

/** A server left behind by a service killed with kill -9: stopped (fast shutdown) before a new start. */
export async function stopLeftoverServer(clusterDir: string, log: EmbeddedServerLog, timeoutMs: number): Promise<void> {
  const pidFile = await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => undefined);
  const pid = Number.parseInt(pidFile?.split('\n')[0] ?? '', 10);
  if (!Number.isSafeInteger(pid) || pid <= 0 || !alive(pid)) return;
  log.info(`stopping the embedded PostgreSQL server (process ${pid}) left running by an earlier start`);
  process.kill(pid, 'SIGINT');
  if (await untilGone(pid, timeoutMs)) return;
  // Immediate shutdown: the next start replays the WAL, so nothing committed is lost.
  process.kill(pid, 'SIGQUIT');
  if (!(await untilGone(pid, timeoutMs))) {
    throw new EmbeddedServerError(`The embedded PostgreSQL server left running (process ${pid}) does not stop.`);
  }
}
