import type { Readable } from 'node:stream';

/** Thrown by receive() when the body passes maxBytes; the temp file is already removed. */
export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`The body is larger than ${maxBytes} bytes.`);
    this.name = 'BlobTooLargeError';
  }
}

/** Bytes written to a temp file, not yet visible as a stored object. */
export interface IncomingBlob {
  /** Random, unguessable, [a-z0-9] only, 128 bits. */
  readonly storageKey: string;
  /** Bytes. */
  readonly size: number;
  /** Hex. */
  readonly sha256: string;
  /** fsync the temp file, rename it to its final place, fsync the folder: after this the bytes are durable. Call once. */
  commit(): Promise<void>;
  /**
   * Remove the temp file (or the committed object, if commit already happened and the caller failed
   * afterwards, e.g. the database insert failed). Idempotent; never throws.
   */
  discard(): Promise<void>;
}

/** Where file bytes live. The disk implementation is the only one today; object storage may follow. */
export interface BlobStore {
  /** Creates what the store needs (folders); safe to call on every start. */
  prepare(): Promise<void>;
  /** Whether new bytes can be written right now. */
  isWritable(): Promise<boolean>;
  /** Free bytes on the volume that holds the store (fs.statfs: bavail * bsize). */
  freeBytes(): Promise<number>;
  /**
   * Streams source into a new temp file, counting and hashing on the way. Rejects with
   * BlobTooLargeError past maxBytes, or with the source's or the disk's error (its `code` kept, e.g.
   * ENOSPC), always after removing the temp file. On rejection the source is unpiped and, unless it
   * failed itself, left flowing so the rest of it is consumed and a multipart parser behind it
   * never stalls; calling `source.resume()` again is harmless.
   */
  receive(source: Readable, options: { maxBytes: number }): Promise<IncomingBlob>;
  /** Absolute path of a stored object (for serving with sendFile). Throws for keys that are not [a-z0-9]+. */
  pathOf(storageKey: string): string;
  /** Removes stored objects; a missing one is ignored. */
  remove(storageKeys: readonly string[]): Promise<void>;
  /**
   * Removes temp files whose mtime is older than olderThanMs, and stored objects older than
   * olderThanMs for which referenced() does not return their key. Never touches anything younger
   * (an upload in progress, or one renamed but not yet in the database). Asks referenced() in
   * batches so a huge store is never listed in memory.
   */
  sweepOrphans(options: {
    olderThanMs: number;
    referenced(keys: readonly string[]): Promise<ReadonlySet<string>>;
  }): Promise<{ tempRemoved: number; objectsRemoved: number }>;
}

/** Deletes stored bytes; called only after the rows that named them are committed away. */
export type RemoveBlobs = (storageKeys: string[]) => Promise<void>;
