import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';

/**
 * Where file bytes live. Nothing here is about files or paths: a disk and an object store both
 * fill it, and everything above it (uploads, downloads, sweeps) is written once against it.
 */
export interface BlobStore {
  /** What and where, for logs: never a secret. */
  readonly description: string;
  /** Creates what the store needs (folders, the bucket); safe to call on every start. */
  prepare(): Promise<void>;
  /** Resolves when a new write can succeed now; else rejects with a StorageError ('full' or 'unavailable'). */
  checkWritable(): Promise<void>;
  /**
   * Streams `source` in, counting and hashing on the way, and resolves once every byte is in the
   * store but not yet visible under its key. Rejects with StorageError 'too-large' past maxBytes,
   * 'full' or 'unavailable' when the store fails, or with the source's own error; in every case
   * nothing is left behind. The source is never destroyed by the store: on failure it is unpiped
   * and left flowing, so the request it belongs to can still be answered. `lengthAtMost`, when
   * known, bounds the source's length beforehand (the request's Content-Length): small ones are
   * hashed without a hashing thread. `key`, when given, is the key the write commits to, one the
   * caller derives (an image variant's from its file's key and options) instead of a fresh random
   * one; committing it replaces whatever that key held, in one step (readers see the old bytes or
   * the new, never a mix).
   */
  write(source: Readable, options: WriteOptions): Promise<BlobWrite>;
  /** The stored bytes of `key`, or the inclusive `range` of them; StorageError 'not-found' if there are none. */
  open(key: string, range?: ByteRange): Promise<BlobRead>;
  /**
   * The inclusive `range` of the stored bytes of `key`, whole in memory: for ranges small enough
   * that one buffer costs less than a stream. StorageError 'not-found' if there are none.
   */
  read(key: string, range: ByteRange): Promise<Buffer>;
  /** Removes stored objects; missing ones are ignored. */
  remove(keys: readonly string[]): Promise<void>;
  /** Every stored object, a page at a time, so a huge store is never listed in memory. */
  listObjects(): AsyncIterable<readonly StoredObject[]>;
  /** Writes that were begun and never committed nor aborted (a crash, a lost connection), a page at a time. */
  listIncompleteWrites(): AsyncIterable<readonly IncompleteWrite[]>;
  /** Removes incomplete writes by their ids; missing ones are ignored. */
  removeIncompleteWrites(ids: readonly string[]): Promise<void>;
  /**
   * Removes every incomplete write begun by instance `instanceId` (on disk its temp files, on an
   * object store its multipart uploads); called once that instance is known to be dead.
   */
  removeIncompleteWritesOf(instanceId: string): Promise<void>;
  /**
   * For shutdown: removes what this store's writes still in progress (streaming, or written and
   * neither committed nor aborted) have left, so a process that exits leaves nothing behind.
   * Never throws; a write aborted this way fails or has nothing left to commit.
   */
  abortWritesInProgress(): Promise<void>;
}

export interface WriteOptions {
  readonly maxBytes: number;
  readonly lengthAtMost?: number;
  /** A storage key (isStorageKey) the caller derived; unset → a new random key. */
  readonly key?: string;
}

/** A write whose bytes are all in the store, waiting for the decision to keep them. */
export interface BlobWrite {
  /** Random, unguessable, [a-z0-9] only; or the key the write was given. */
  readonly key: string;
  /** Bytes. */
  readonly size: number;
  /** Hex. */
  readonly sha256: string;
  /** Makes the bytes durable and visible under `key`. Call once. */
  commit(): Promise<void>;
  /** Removes what the write left, the committed object included; idempotent, never throws. */
  abort(): Promise<void>;
}

/** First and last byte, both included. */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

export interface BlobRead {
  /** The bytes asked for; destroying it stops the read. */
  readonly stream: Readable;
}

export interface StoredObject {
  readonly key: string;
  readonly modifiedAt: Date;
  /**
   * The resumable upload whose bytes this may be, for a store that keeps an upload's bytes among its
   * objects and writes (ResumableBytes of the same backend): the sweeps leave them alone while that
   * upload has state.
   */
  readonly resumableId?: string;
}

export interface IncompleteWrite {
  readonly id: string;
  /** The storage key the write will commit to, where the store knows it. */
  readonly key?: string;
  readonly startedAt: Date;
  /** The instance that began it; undefined for writes of a version that did not record it. */
  readonly instanceId: string | undefined;
  /** As for StoredObject. */
  readonly resumableId?: string;
}

const KEY = /^[a-z0-9]{1,128}$/;
/** 128 random bits: a key names bytes that nobody can guess. */
export function newStorageKey(): string {
  return randomBytes(16).toString('hex');
}

/** Only keys the service made are ever resolved, so no key reaches outside the store. */
export function isStorageKey(key: string): boolean {
  return KEY.test(key);
}
