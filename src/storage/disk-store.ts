import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { access, constants, lstat, mkdir, open, opendir, rename, rm, statfs, unlink } from 'node:fs/promises';
import path from 'node:path';
import { finished, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BlobTooLargeError, type BlobStore, type IncomingBlob } from './blob-store.js';

const KEY = /^[a-z0-9]+$/;
/**
 * Buffer between the network, the hash and the disk, per upload. With the default 16 KiB, writes
 * are small and hashing (on the main thread) and writing (on the thread pool) overlap less:
 * uploads measured 15 to 25 % slower.
 */
const HIGH_WATER_MARK = 1024 * 1024;
/** How many files remove() unlinks at once. */
const PARALLEL_UNLINKS = 64;

export interface DiskStoreOptions {
  /** Keys per referenced() call in sweepOrphans(), and files examined at once. */
  sweepBatchSize?: number;
}

/**
 * Bytes under one folder: `tmp/` for uploads in progress and `objects/` for stored files, on the
 * same file system so a finished upload is moved into place by an atomic rename.
 */
export class DiskStore implements BlobStore {
  readonly tmpDir: string;
  readonly objectsDir: string;
  readonly #sweepBatchSize: number;

  constructor(
    readonly root: string,
    options: DiskStoreOptions = {},
  ) {
    this.tmpDir = path.join(root, 'tmp');
    this.objectsDir = path.join(root, 'objects');
    this.#sweepBatchSize = options.sweepBatchSize ?? 500;
  }

  async prepare(): Promise<void> {
    await mkdir(this.tmpDir, { recursive: true });
    await mkdir(this.objectsDir, { recursive: true });
  }

  async isWritable(): Promise<boolean> {
    try {
      await access(this.tmpDir, constants.W_OK);
      await access(this.objectsDir, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  }

  async freeBytes(): Promise<number> {
    const stats = await statfs(this.root);
    return stats.bavail * stats.bsize;
  }

  async receive(source: Readable, { maxBytes }: { maxBytes: number }): Promise<IncomingBlob> {
    const storageKey = randomBytes(16).toString('hex');
    const tempPath = path.join(this.tmpDir, `${storageKey}.part`);
    const hash = createHash('sha256');
    let size = 0;
    const meter = new Transform({
      highWaterMark: HIGH_WATER_MARK,
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        // Refused before it is passed on, so no byte past the limit reaches the disk.
        if (size > maxBytes) return done(new BlobTooLargeError(maxBytes));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    const file = createWriteStream(tempPath, { flags: 'wx', highWaterMark: HIGH_WATER_MARK });

    // pipeline(source, …) would destroy the source on failure, and a destroyed multipart file stream
    // stops the parsing of the request the caller still has to answer; so the source is piped by
    // hand and its end watched.
    const stopWatching = finished(source, { writable: false }, (error) => {
      if (error) meter.destroy(error);
    });
    source.pipe(meter);
    try {
      await pipeline(meter, file);
    } catch (error) {
      source.unpipe(meter);
      if (!source.destroyed) {
        // Consume the rest so nothing upstream waits for a reader that is gone.
        source.on('error', ignore);
        source.resume();
      }
      // pipeline() settles on the first error, possibly before the file is even open: removing it
      // earlier could leave a file created after the removal.
      if (!file.closed) await new Promise<void>((resolve) => file.once('close', () => resolve()));
      // The caller needs the original error (its code); a leftover is swept later.
      await rm(tempPath, { force: true }).catch(ignore);
      throw error;
    } finally {
      stopWatching();
    }
    return new DiskBlob(storageKey, size, hash.digest('hex'), tempPath, this.pathOf(storageKey));
  }

  pathOf(storageKey: string): string {
    if (!KEY.test(storageKey)) throw new Error(`Not a storage key: ${JSON.stringify(storageKey)}`);
    return path.join(this.objectsDir, storageKey.slice(0, 2), storageKey);
  }

  async remove(storageKeys: readonly string[]): Promise<void> {
    const paths = storageKeys.map((key) => this.pathOf(key));
    for (let i = 0; i < paths.length; i += PARALLEL_UNLINKS) {
      await Promise.all(paths.slice(i, i + PARALLEL_UNLINKS).map(unlinkIfPresent));
    }
  }

  async sweepOrphans({
    olderThanMs,
    referenced,
  }: {
    olderThanMs: number;
    referenced(keys: readonly string[]): Promise<ReadonlySet<string>>;
  }): Promise<{ tempRemoved: number; objectsRemoved: number }> {
    const cutoff = Date.now() - olderThanMs;
    let tempRemoved = 0;
    let objectsRemoved = 0;

    let temps: string[] = [];
    const sweepTemps = async () => {
      const old = await olderThan(temps, cutoff);
      temps = [];
      tempRemoved += await unlinkAll(old);
    };
    for await (const entry of await opendir(this.tmpDir)) {
      if (!entry.isFile()) continue;
      temps.push(path.join(this.tmpDir, entry.name));
      if (temps.length >= this.#sweepBatchSize) await sweepTemps();
    }
    await sweepTemps();

    let keys: string[] = [];
    const sweepObjects = async () => {
      const paths = new Map(keys.map((key) => [this.pathOf(key), key]));
      keys = [];
      const old = (await olderThan([...paths.keys()], cutoff)).map((file) => paths.get(file)!);
      if (old.length === 0) return;
      const keep = await referenced(old);
      objectsRemoved += await unlinkAll(old.filter((key) => !keep.has(key)).map((key) => this.pathOf(key)));
    };
    for await (const folder of await opendir(this.objectsDir)) {
      if (!folder.isDirectory()) continue;
      for await (const entry of await opendir(path.join(this.objectsDir, folder.name))) {
        // Only what pathOf() would point at: anything else is not ours to judge.
        if (!entry.isFile() || !KEY.test(entry.name) || entry.name.slice(0, 2) !== folder.name) continue;
        keys.push(entry.name);
        if (keys.length >= this.#sweepBatchSize) await sweepObjects();
      }
    }
    await sweepObjects();

    return { tempRemoved, objectsRemoved };
  }
}

class DiskBlob implements IncomingBlob {
  #state: 'received' | 'committing' | 'discarded' = 'received';
  #commit: Promise<void> | undefined;

  constructor(
    readonly storageKey: string,
    readonly size: number,
    readonly sha256: string,
    private readonly tempPath: string,
    private readonly objectPath: string,
  ) {}

  commit(): Promise<void> {
    if (this.#state !== 'received') return Promise.reject(new Error(`This blob is already ${this.#state}.`));
    this.#state = 'committing';
    this.#commit = this.#moveIntoPlace();
    return this.#commit;
  }

  async #moveIntoPlace(): Promise<void> {
    await syncPath(this.tempPath, 'r+');
    const folder = path.dirname(this.objectPath);
    const created = await mkdir(folder, { recursive: true });
    await rename(this.tempPath, this.objectPath);
    await syncPath(folder, 'r');
    // A new fan-out folder is itself an entry of objects/ that must survive a crash.
    if (created !== undefined) await syncPath(path.dirname(folder), 'r');
  }

  async discard(): Promise<void> {
    this.#state = 'discarded';
    try {
      await this.#commit?.catch(ignore);
      // Both: a commit that failed half-way may have left the bytes in either place.
      await Promise.all([rm(this.tempPath, { force: true }), rm(this.objectPath, { force: true })]);
    } catch {
      // Whatever is left has no row and is old soon: sweepOrphans() removes it.
    }
  }
}

async function syncPath(file: string, flags: 'r' | 'r+'): Promise<void> {
  const handle = await open(file, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The files of `files` last modified before `cutoff`; vanished ones are left out. */
async function olderThan(files: readonly string[], cutoff: number): Promise<string[]> {
  const times = await Promise.all(
    files.map((file) =>
      lstat(file).then(
        (stats) => stats.mtimeMs,
        (error: NodeJS.ErrnoException) => {
          if (error.code === 'ENOENT') return Infinity;
          throw error;
        },
      ),
    ),
  );
  return files.filter((_, i) => times[i]! < cutoff);
}

/** How many of `files` this call removed: another instance sweeping at once may win some. */
async function unlinkAll(files: readonly string[]): Promise<number> {
  const removed = await Promise.all(files.map(unlinkIfPresent));
  return removed.filter(Boolean).length;
}

async function unlinkIfPresent(file: string): Promise<boolean> {
  try {
    await unlink(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

function ignore(): void {}
