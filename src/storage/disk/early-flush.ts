import type { FileHandle } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { PASS_HIGH_WATER_MARK } from '../high-water-marks.js';

/**
 * While a file streams in, what is written so far is flushed after every this many bytes, so the
 * disk writes while the network receives and the fsync that makes the file durable has only the
 * last few MiB left. With a flush at the end alone, a large upload waits for the whole file's
 * writeback after its last byte, and a resumable one after every PATCH (bench cases upload-large
 * and resumable-large, which report the time after the last byte).
 */
export const FLUSH_EVERY_BYTES = 4 * 1024 * 1024;

/**
 * Passes bytes on to the file behind `handle` unchanged, and after every FLUSH_EVERY_BYTES starts a
 * flush of that file unless one is running. Only a head start: the fsync before the answer is the
 * one that counts, so a failed early flush is ignored. The handle's owner closes it after the
 * stream ends; a FileHandle closes only once the flush still running on it is done.
 */
export class EarlyFlush extends Transform {
  #sinceFlush = 0;
  #flushing = false;

  constructor(private readonly handle: FileHandle) {
    super({ highWaterMark: PASS_HIGH_WATER_MARK });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null, data?: Buffer) => void): void {
    const behind = this.passing(chunk);
    this.#sinceFlush += chunk.length;
    if (this.#sinceFlush >= FLUSH_EVERY_BYTES && !this.#flushing) {
      this.#sinceFlush = 0;
      this.#flushing = true;
      this.handle
        .datasync()
        .catch(() => {})
        .finally(() => (this.#flushing = false));
    }
    if (behind) behind.then(() => done(null, chunk), done);
    else done(null, chunk);
  }

  /** For subclasses that look at the bytes on their way; a promise holds the chunk back until it settles. */
  protected passing(_chunk: Buffer): Promise<void> | undefined {
    return undefined;
  }
}
