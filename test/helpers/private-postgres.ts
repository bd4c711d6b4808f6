import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The PostgreSQL server binaries of this machine, if any. */
function binDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const version = readdirSync(root).sort().at(-1);
  return version ? path.join(root, version, 'bin') : undefined;
}

/**
 * Why a private PostgreSQL server cannot be run here, or undefined when it can. PostgreSQL refuses
 * to run as root, so as root it runs as the `postgres` user through runuser.
 */
export function privatePostgresUnavailable(): string | undefined {
  const bin = binDir();
  if (!bin || !existsSync(path.join(bin, 'initdb'))) return 'PostgreSQL server binaries are not installed';
  if (process.getuid?.() === 0 && !existsSync('/usr/sbin/runuser') && !existsSync('/sbin/runuser')) return 'runuser is missing';
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface PrivatePostgres {
  url: string;
  start(): Promise<void>;
  /** A fast shutdown: open connections are terminated, as in a real outage. */
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

/** A throwaway PostgreSQL server that a test may stop and start without touching the shared one. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binDir() as string;
  const dir = await mkdtemp(path.join(tmpdir(), 'filestore-pg-'));
  const asPostgres = process.getuid?.() === 0;
  if (asPostgres) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const exec = (tool: string, args: string[]) =>
    asPostgres ? run('runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args]) : run(path.join(bin, tool), args);
  const port = await freePort();
  const data = path.join(dir, 'data');
  await exec('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = async () => {
    await exec('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'log'), '-w', 'start']);
  };
  const stop = async () => {
    await exec('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    destroy: async () => {
      await stop().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
