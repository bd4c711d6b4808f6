import { constants, createReadStream } from 'node:fs';
import { access, lstat, mkdir, open, opendir, rename, rm, statfs, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { INSTANCE_ID, newInstanceId } from '../../instance-id.js';
import { isStorageKey, newStorageKey, type BlobRead, type BlobStore, type BlobWrite, type ByteRange, type IncompleteWrite, type StoredObject, type WriteOptions } from '../blob-store.js';
import { DiskWrite } from './write.js';
import { EarlyFlush } from './early-flush.js';
import { isStorageError, StorageError } from '../errors.js';
import { fromFileSystemError } from './errors.js';
import { FileRangeStream } from './file-range-stream.js';
import { FILE_HIGH_WATER_MARK } from '../high-water-marks.js';
import { meter } from '../meter.js';

/** How many files remove() unlinks at once. */
const PARALLEL_UNLINKS = 64;
const TEMP_SUFFIX = '.part';
/**
 * checkWritable() runs before every upload: a healthy answer is trusted this long, so small uploads
 * do not each pay three more file system calls on libuv's threads.
 */
const HEALTHY_FOR_MS = 1000;
/** `<instance id>_<key>`, or a bare key as written by versions without instance ids. */
const WRITE_ID = /^(?:([a-z0-9-]{1,63})_)?([a-z0-9]{1,128})$/;

export interface DiskStoreOptions {
  /** Names this process's temp files, so another instance can remove them once this one is dead. */
  instanceId?: string;
  /** Writes are refused (as 'full') while the volume has less free space. */
  minFreeBytes?: number;
  /** Entries per page of listObjects() and listIncompleteWrites(). */
  pageSize?: number;
}

/**
 * Bytes under one folder: `tmp/` for writes in progress and `objects/<first two>/<key>` for stored
 * ones, on one file system so a finished write is moved into place by an atomic rename.
 */
export class DiskStore implements BlobStore {
  readonly tmpDir: string;
  readonly objectsDir: string;
  readonly description: string;
  readonly #minFreeBytes: number;
  readonly #pageSize: number;
  readonly #instanceId: string;
  /** Temp files of this store's writes not yet committed nor aborted. */
  readonly #inProgress = new Set<string>();
  #healthyUntil = 0;

  constructor(
    readonly root: string,
    options: DiskStoreOptions = {},
  ) {
    this.tmpDir = path.join(root, 'tmp');
    this.objectsDir = path.join(root, 'objects');
    this.description = `disk at ${root}`;
    this.#minFreeBytes = options.minFreeBytes ?? 0;
    this.#pageSize = options.pageSize ?? 500;
    this.#instanceId = options.instanceId ?? newInstanceId();
    if (!INSTANCE_ID.test(this.#instanceId)) throw new Error(`Not an instance id: ${JSON.stringify(this.#instanceId)}`);
  }

  async prepare(): Promise<void> {
    await mkdir(this.tmpDir, { recursive: true });
    await mkdir(this.objectsDir, { recursive: true });
  }

  async checkWritable(): Promise<void> {
    if (performance.now() < this.#healthyUntil) return;
    let free: number;
    try {
      await access(this.tmpDir, constants.W_OK);
      await access(this.objectsDir, constants.W_OK);
      const stats = await statfs(this.root);
      free = stats.bavail * stats.bsize;
    } catch (error) {
      throw fromFileSystemError(error);
    }
    if (free < this.#minFreeBytes) throw new StorageError('full', `disk: ${free} bytes free, below the floor of ${this.#minFreeBytes}`);
    this.#healthyUntil = performance.now() + HEALTHY_FOR_MS;
  }

  async write(source: Readable, { maxBytes, lengthAtMost, key: givenKey }: WriteOptions): Promise<BlobWrite> {
    const key = givenKey ?? newStorageKey();
    const objectPath = this.#objectPath(key);
    // A temp name of its own for a given key: two writes of one derived key never share a temp file.
    const tempPath = this.#tempPath(`${this.#instanceId}_${givenKey === undefined ? key : newStorageKey()}`);
    const metered = meter(source, maxBytes, lengthAtMost);
    // A source that fails while the file opens fails the meter before anything listens to it: the
    // pipeline below still sees that failure, and the process does not.
    metered.on('error', () => {});
    this.#inProgress.add(tempPath);
    let handle: FileHandle;
    try {
      handle = await open(tempPath, 'wx');
    } catch (error) {
      this.#inProgress.delete(tempPath);
      // The meter's end leaves the source flowing, as after any other failure.
      metered.destroy();
      throw fromFileSystemError(error);
    }
    // The stream fsyncs and closes the handle at its end, after any early flush still running on
    // it: the commit need not open the file again to make it durable.
    const file = handle.createWriteStream({ highWaterMark: FILE_HIGH_WATER_MARK, flush: true });
    // Only the file system's own errors: pipeline() also destroys the file with the meter's or source's.
    let diskError: unknown;
    file.once('error', (error: NodeJS.ErrnoException) => {
      if (error.syscall) diskError = error;
    });
    try {
      await pipeline(metered, new EarlyFlush(handle), file);
    } catch (error) {
      if (!file.closed) await new Promise<void>((resolve) => file.once('close', () => resolve()));
      await rm(tempPath, { force: true }).catch(() => {});
      this.#inProgress.delete(tempPath);
      throw error === diskError ? fromFileSystemError(error) : error;
    }
    const written = { key, size: metered.size, sha256: metered.sha256(), synced: true };
    return new DiskWrite(written, tempPath, objectPath, () => this.#inProgress.delete(tempPath));
  }

  /**
   * Takes `file`, a finished file on the store's volume (a completed resumable upload), as a write:
   * moved, not copied, into the temp folder, and hashed where it lies unless `known` gives its size
   * and sha256, so its bytes are not written twice. The file is gone on success and on failure
   * alike; what is left is the returned write's, exactly as after write().
   */
  async adopt(file: string, { maxBytes }: { maxBytes: number }, known?: { size: number; sha256: string }): Promise<BlobWrite> {
    const key = newStorageKey();
    const tempPath = this.#tempPath(`${this.#instanceId}_${key}`);
    try {
      await rename(file, tempPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw fromFileSystemError(error);
      // Another volume after all: copied through the usual write.
      const copy = await this.write(createReadStream(file, { highWaterMark: FILE_HIGH_WATER_MARK }), { maxBytes });
      await rm(file, { force: true });
      return copy;
    }
    this.#inProgress.add(tempPath);
    const settled = () => this.#inProgress.delete(tempPath);
    try {
      const { size } = await lstat(tempPath);
      if (size > maxBytes) throw new StorageError('too-large', `more than ${maxBytes} bytes`);
      if (known?.size === size) return new DiskWrite({ key, size, sha256: known.sha256, synced: false }, tempPath, this.#objectPath(key), settled);
      const metered = meter(createReadStream(tempPath, { highWaterMark: FILE_HIGH_WATER_MARK }), maxBytes);
      await finished(metered.resume());
      return new DiskWrite({ key, size: metered.size, sha256: metered.sha256(), synced: false }, tempPath, this.#objectPath(key), settled);
    } catch (error) {
      await rm(tempPath, { force: true }).catch(() => {});
      settled();
      throw isStorageError(error) ? error : fromFileSystemError(error);
    }
  }

  async open(key: string, range?: ByteRange): Promise<BlobRead> {
    const handle = await open(this.#objectPath(key), 'r').catch((error: unknown) => {
      throw fromFileSystemError(error, 'not-found');
    });
    if (range) return { stream: new FileRangeStream(handle, range.start, range.end) };
    // The whole file needs its size; a download's range comes from the row, and saves the call.
    try {
      const { size } = await handle.stat();
      return { stream: new FileRangeStream(handle, 0, size - 1) };
    } catch (error) {
      await handle.close();
      throw fromFileSystemError(error);
    }
  }

  async read(key: string, range: ByteRange): Promise<Buffer> {
    const handle = await open(this.#objectPath(key), 'r').catch((error: unknown) => {
      throw fromFileSystemError(error, 'not-found');
    });
    try {
      const bytes = Buffer.allocUnsafe(range.end - range.start + 1);
      for (let done = 0; done < bytes.length; ) {
        const { bytesRead } = await handle.read(bytes, done, bytes.length - done, range.start + done);
        if (bytesRead === 0) throw new StorageError('unavailable', `disk: ${key} ended before byte ${range.start + done}`);
        done += bytesRead;
      }
      return bytes;
    } catch (error) {
      throw isStorageError(error) ? error : fromFileSystemError(error);
    } finally {
      await handle.close();
    }
  }

  async remove(keys: readonly string[]): Promise<void> {
    const paths = keys.map((key) => this.#objectPath(key));
    for (let i = 0; i < paths.length; i += PARALLEL_UNLINKS) {
      await Promise.all(paths.slice(i, i + PARALLEL_UNLINKS).map(unlinkIfPresent));
    }
  }

  async *listObjects(): AsyncIterable<readonly StoredObject[]> {
    let page: string[] = [];
    for await (const folder of await opendir(this.objectsDir)) {
      if (!folder.isDirectory()) continue;
      for await (const entry of await opendir(path.join(this.objectsDir, folder.name))) {
        // Only what #objectPath() would point at: anything else is not the store's to judge.
        if (!entry.isFile() || !isStorageKey(entry.name) || entry.name.slice(0, 2) !== folder.name) continue;
        page.push(entry.name);
        if (page.length >= this.#pageSize) {
          yield await this.#withTimes(page, (key) => this.#objectPath(key));
          page = [];
        }
      }
    }
    if (page.length > 0) yield await this.#withTimes(page, (key) => this.#objectPath(key));
  }

  async *listIncompleteWrites(): AsyncIterable<readonly IncompleteWrite[]> {
    const started = async (ids: string[]) =>
      (await this.#withTimes(ids, (id) => this.#tempPath(id))).map(({ key, modifiedAt }) => ({
        id: key,
        startedAt: modifiedAt,
        instanceId: WRITE_ID.exec(key)?.[1],
      }));
    let page: string[] = [];
    for await (const entry of await opendir(this.tmpDir)) {
      const id = entry.name.slice(0, -TEMP_SUFFIX.length);
      if (!entry.isFile() || !entry.name.endsWith(TEMP_SUFFIX) || !WRITE_ID.test(id)) continue;
      page.push(id);
      if (page.length >= this.#pageSize) {
        yield await started(page);
        page = [];
      }
    }
    if (page.length > 0) yield await started(page);
  }

  async removeIncompleteWrites(ids: readonly string[]): Promise<void> {
    await Promise.all(ids.map((id) => unlinkIfPresent(this.#tempPath(id))));
  }

  async removeIncompleteWritesOf(instanceId: string): Promise<void> {
    if (!INSTANCE_ID.test(instanceId)) throw new Error(`Not an instance id: ${JSON.stringify(instanceId)}`);
    const prefix = `${instanceId}_`;
    const names: string[] = [];
    for await (const entry of await opendir(this.tmpDir)) {
      if (entry.isFile() && entry.name.startsWith(prefix) && entry.name.endsWith(TEMP_SUFFIX)) names.push(entry.name);
    }
    for (let i = 0; i < names.length; i += PARALLEL_UNLINKS) {
      await Promise.all(names.slice(i, i + PARALLEL_UNLINKS).map((name) => unlinkIfPresent(path.join(this.tmpDir, name))));
    }
  }

  async abortWritesInProgress(): Promise<void> {
    // Unlinking a file that is still being written is safe: the bytes go to an inode without a name.
    await Promise.all([...this.#inProgress].map((tempPath) => rm(tempPath, { force: true }).catch(() => {})));
    this.#inProgress.clear();
  }

  #objectPath(key: string): string {
    if (!isStorageKey(key)) throw new Error(`Not a storage key: ${JSON.stringify(key)}`);
    return path.join(this.objectsDir, key.slice(0, 2), key);
  }

  #tempPath(id: string): string {
    if (!WRITE_ID.test(id)) throw new Error(`Not a write id: ${JSON.stringify(id)}`);
    return path.join(this.tmpDir, `${id}${TEMP_SUFFIX}`);
  }

  /** The names with their files' modification times; files gone meanwhile are left out. */
  async #withTimes(names: readonly string[], pathOf: (name: string) => string): Promise<StoredObject[]> {
    const times = await Promise.all(
      names.map((name) =>
        lstat(pathOf(name)).then(
          (stats) => stats.mtime,
          (error: NodeJS.ErrnoException) => {
            if (error.code === 'ENOENT') return undefined;
            throw fromFileSystemError(error);
          },
        ),
      ),
    );
    return names.flatMap((key, i) => (times[i] ? [{ key, modifiedAt: times[i] }] : []));
  }
}

async function unlinkIfPresent(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw fromFileSystemError(error);
  }
}
