import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, opendir, rm, stat, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fromFileSystemError, isStorageError } from './errors.js';
import { METER_HIGH_WATER_MARK } from './meter.js';
import type { ResumableBytes } from './resumable-bytes.js';

const ID = /^[a-f0-9]{32}$/;
const PAGE_SIZE = 500;

/** Each incomplete upload is one file under `<STORAGE_DIR>/resumable/`, on the same volume as the objects. */
export class DiskResumableBytes implements ResumableBytes {
  readonly dir: string;

  constructor(storageDir: string) {
    this.dir = path.join(storageDir, 'resumable');
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
    try {
      await truncate(file, offset);
      const stream = createWriteStream(file, { flags: 'r+', start: offset, highWaterMark: METER_HIGH_WATER_MARK });
      let diskError: unknown;
      stream.once('error', (error: NodeJS.ErrnoException) => {
        if (error.syscall) diskError = error;
      });
      // A failed source (the client went away) ends the append, keeping what was written.
      await pipeline(source, stream).catch(() => {});
      if (!stream.closed) await new Promise<void>((resolve) => stream.once('close', () => resolve()));
      if (diskError) throw diskError;
      return await syncedSize(file);
    } catch (error) {
      throw isStorageError(error) ? error : fromFileSystemError(error, 'not-found');
    }
  }

  read(id: string): Readable {
    return createReadStream(this.#path(id), { highWaterMark: METER_HIGH_WATER_MARK });
  }

  async remove(ids: readonly string[]): Promise<void> {
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
