import { mkdir, open, opendir, rm, stat, truncate, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobWrite } from '../blob-store.js';
import type { DiskStore } from './store.js';
import { EarlyFlush } from './early-flush.js';
import { isStorageError } from '../errors.js';
import { fromFileSystemError } from './errors.js';
import { FILE_HIGH_WATER_MARK } from '../high-water-marks.js';
import type { ResumableBytes } from '../resumable-bytes.js';
import { RunningHashes } from '../running-hashes.js';
import type { Sha256 } from '../sha256-threads.js';

const ID = /^[a-f0-9]{32}$/;
const PAGE_SIZE = 500;

/** Each incomplete upload is one file under `<STORAGE_DIR>/resumable/`, on the same volume as the objects. */
export class DiskResumableBytes implements ResumableBytes {
  readonly dir: string;
  readonly #store: DiskStore;
  readonly #hashes = new RunningHashes();

  constructor(store: DiskStore) {
    this.#store = store;
    this.dir = path.join(store.root, 'resumable');
  }

  async prepare(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
  }

  async create(id: string): Promise<void> {
    await writeFile(this.#path(id), '', { flag: 'wx' }).catch((error: unknown) => {
      throw fromFileSystemError(error);
    });
  }

  async append(id: string, offset: number, source: Readable): Promise<number> {
    const file = this.#path(id);
    const hash = this.#hashes.take(id, offset);
    try {
      await truncate(file, offset);
      const handle = await open(file, 'r+');
      // The stream closes the handle at its end, after any flush still running on it.
      const stream = handle.createWriteStream({ start: offset, highWaterMark: FILE_HIGH_WATER_MARK });
      let diskError: unknown;
      stream.once('error', (error: NodeJS.ErrnoException) => {
        if (error.syscall) diskError = error;
      });
      const tap = new AppendTap(handle, hash);
      // A failed source (the client went away) ends the append, keeping what was written.
      await pipeline(source, tap, stream).catch(() => {});
      if (!stream.closed) await new Promise<void>((resolve) => stream.once('close', () => resolve()));
      if (diskError) throw diskError;
      // No more than this append wrote: bytes past them, from a writer whose lease ran out, are not its to count.
      const size = Math.min(await syncedSize(file), offset + tap.bytes);
      // Bytes that passed the tap but never reached the file (the stream was cut) leave the hash behind.
      if (hash && size === offset + tap.bytes) this.#hashes.keep(id, size, hash);
      else hash?.drop();
      return size;
    } catch (error) {
      hash?.drop();
      throw isStorageError(error) ? error : fromFileSystemError(error, 'not-found');
    }
  }

  async finish(id: string, limits: { maxBytes: number }): Promise<BlobWrite> {
    return this.#store.adopt(this.#path(id), limits, await this.#hashes.finish(id));
  }

  async remove(ids: readonly string[]): Promise<void> {
    this.#hashes.forget(ids);
    await Promise.all(ids.map((id) => rm(this.#path(id), { force: true })));
  }

  async *list(): AsyncIterable<ReadonlyArray<{ id: string; modifiedAt: Date }>> {
    let page: string[] = [];
    const withTimes = async (ids: string[]) => {
      const times = await Promise.all(ids.map((id) => stat(this.#path(id)).then((s) => s.mtime, () => undefined)));
      return ids.flatMap((id, i) => (times[i] ? [{ id, modifiedAt: times[i] }] : []));
    };
    for await (const entry of await opendir(this.dir)) {
      if (!entry.isFile() || !ID.test(entry.name)) continue;
      page.push(entry.name);
      if (page.length >= PAGE_SIZE) {
        yield await withTimes(page);
        page = [];
      }
    }
    if (page.length > 0) yield await withTimes(page);
  }

  #path(id: string): string {
    if (!ID.test(id)) throw new Error(`Not a resumable upload id: ${JSON.stringify(id)}`);
    return path.join(this.dir, id);
  }
}

/** Counts an append's bytes and extends the upload's running hash, when there is one, on their way to the file. */
class AppendTap extends EarlyFlush {
  bytes = 0;

  constructor(
    handle: FileHandle,
    private readonly hash: Sha256 | undefined,
  ) {
    super(handle);
  }

  protected override passing(chunk: Buffer): Promise<void> | undefined {
    this.bytes += chunk.length;
    return this.hash?.update(chunk);
  }
}

/** Flushes the file to the disk and gives its length: the bytes that will be there after a crash. */
async function syncedSize(file: string): Promise<number> {
  const handle = await open(file, 'r+');
  try {
    await handle.sync();
    return (await handle.stat()).size;
  } finally {
    await handle.close();
  }
}
