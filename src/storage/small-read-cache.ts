import { LRUCache } from 'lru-cache';
import type { Readable } from 'node:stream';
import type { BlobRead, BlobStore, BlobWrite, ByteRange, IncompleteWrite, StoredObject, WriteOptions } from './blob-store.js';

/** Reads of at most this many bytes from byte 0 are kept: the bodies a download reads whole. */
export const CACHED_READ_BYTES = 64 * 1024;
/** What all kept reads may hold together, each counted with its bookkeeping. */
export const CACHE_BYTES = 8 * 1024 * 1024;
/** The Map entry, the Buffer object and its backing store's header, roughly. */
export const ENTRY_OVERHEAD_BYTES = 256;

const cost = (bytes: Buffer) => bytes.length + ENTRY_OVERHEAD_BYTES;

/**
 * The first bytes of recently read small objects, by storage key; the least recently used go first:
 * a small download then costs its row's lookup and no file system calls (bench cases download-1k
 * and images' kept variants, each against a floor that opens, reads and closes the file).
 * It needs no invalidation across instances: a key is random and never reused, and the bytes under
 * it are never rewritten (a derived key, an image variant's, is only ever written with the same
 * bytes again), so whatever is kept is what the store holds for as long as it holds it.
 * Whether a file may be served at all is its row's to say, and downloads read the row every time:
 * a file deleted or expired on any instance is refused before its key is looked up here.
 */
export class SmallReadCache {
  readonly #entries: LRUCache<string, Buffer>;

  constructor(
    readonly maxBytes = CACHE_BYTES,
    readonly maxReadBytes = CACHED_READ_BYTES,
  ) {
    this.#entries = new LRUCache({ maxSize: maxBytes, sizeCalculation: cost });
  }

  /** What is held, bookkeeping included: never more than maxBytes. */
  get bytes(): number {
    return this.#entries.calculatedSize;
  }

  /** The inclusive `range` of `key`, when the bytes kept for it reach that far. */
  get(key: string, range: ByteRange): Buffer | undefined {
    const prefix = this.#entries.get(key);
    if (prefix === undefined || range.end >= prefix.length) return undefined;
    return prefix.subarray(range.start, range.end + 1);
  }

  /** Keeps `bytes`, the bytes of `key` from byte 0 on, if they are few enough. */
  keep(key: string, bytes: Buffer): void {
    if (bytes.length > this.maxReadBytes || cost(bytes) > this.maxBytes) return;
    const held = this.#entries.peek(key);
    if (held !== undefined && held.length >= bytes.length) return;
    // A buffer of its own: a small read can be a slice of a shared pool, which it would keep alive.
    const copy = Buffer.allocUnsafeSlow(bytes.length);
    bytes.copy(copy);
    this.#entries.set(key, copy);
  }

  forget(keys: readonly string[]): void {
    for (const key of keys) this.#entries.delete(key);
  }
}

/**
 * A store whose small reads from byte 0 are answered from memory after the first: a 1 KiB download
 * then costs its row's lookup and no call to the disk or the object store. Everything else is the
 * store's own.
 */
export class CachedSmallReads implements BlobStore {
  readonly description: string;

  constructor(
    readonly store: BlobStore,
    readonly cache = new SmallReadCache(),
  ) {
    this.description = store.description;
  }

  async read(key: string, range: ByteRange): Promise<Buffer> {
    const kept = this.cache.get(key, range);
    if (kept !== undefined) return kept;
    const bytes = await this.store.read(key, range);
    if (range.start === 0) this.cache.keep(key, bytes);
    return bytes;
  }

  remove(keys: readonly string[]): Promise<void> {
    this.cache.forget(keys);
    return this.store.remove(keys);
  }

  prepare(): Promise<void> {
    return this.store.prepare();
  }

  checkWritable(): Promise<void> {
    return this.store.checkWritable();
  }

  write(source: Readable, options: WriteOptions): Promise<BlobWrite> {
    // A given key may be written again: what was kept of it is not trusted past the new write.
    if (options.key !== undefined) this.cache.forget([options.key]);
    return this.store.write(source, options);
  }

  open(key: string, range?: ByteRange): Promise<BlobRead> {
    return this.store.open(key, range);
  }

  listObjects(): AsyncIterable<readonly StoredObject[]> {
    return this.store.listObjects();
  }

  listIncompleteWrites(): AsyncIterable<readonly IncompleteWrite[]> {
    return this.store.listIncompleteWrites();
  }

  removeIncompleteWrites(ids: readonly string[]): Promise<void> {
    return this.store.removeIncompleteWrites(ids);
  }

  removeIncompleteWritesOf(instanceId: string): Promise<void> {
    return this.store.removeIncompleteWritesOf(instanceId);
  }

  abortWritesInProgress(): Promise<void> {
    return this.store.abortWritesInProgress();
  }
}
