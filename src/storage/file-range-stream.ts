import type { FileHandle } from 'node:fs/promises';
import { ServerResponse } from 'node:http';
import { Readable, type Writable } from 'node:stream';

/** Read chunks of 1 MiB: Node's default 16 KiB chunks make large downloads about three times slower. */
const READ_CHUNK_BYTES = 1024 * 1024;
/** Chunks kept for reuse across downloads; beyond this, a finished download's chunks are left to the GC. */
const POOL_LIMIT = 8;
const pool: Buffer[] = [];
/**
 * Chunks one download keeps track of; an older one is forgotten (left to the GC, never reused), so
 * that a response whose queue is never seen empty does not hold the whole file.
 */
const LENT_LIMIT = 4;

/** Only whole chunks are kept: the last read of a file, or all of a small one, is allocated to its size. */
function recycle(chunks: Buffer[]): void {
  for (const chunk of chunks.splice(0)) if (pool.length < POOL_LIMIT && chunk.length === READ_CHUNK_BYTES) pool.push(chunk);
}

/**
 * The bytes start..end (inclusive) of an open file, closed when the stream ends or is destroyed.
 *
 * Piped into an HTTP response, it reads into chunks that are reused once the response has written
 * them: a fresh 1 MiB buffer per read costs a garbage collection every few dozen MiB, and once the
 * heap's old generation is near its limit, a full one, which halved large downloads in a service
 * that had been busy. The response is done with a chunk when nothing is left in its socket's
 * queue (`writableLength` 0), or once it has finished; any other destination might pass the same
 * buffer on, so it gets fresh ones.
 */
export class FileRangeStream extends Readable {
  readonly #handle: FileHandle;
  readonly #end: number;
  #position: number;
  #response: ServerResponse | undefined;
  /** Chunks handed downstream and not known to be written yet. */
  readonly #lent: Buffer[] = [];

  constructor(handle: FileHandle, start: number, end: number) {
    super({ highWaterMark: READ_CHUNK_BYTES });
    this.#handle = handle;
    this.#position = start;
    this.#end = end;
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    if (destination instanceof ServerResponse && !this.#response) {
      this.#response = destination;
      // 'finish' follows the last write's completion: every chunk lent is written by then.
      destination.once('finish', () => recycle(this.#lent));
    }
    return super.pipe(destination, options);
  }

  override _read(): void {
    if (this.#response && this.readableLength === 0 && (this.#response as Writable).writableLength === 0) recycle(this.#lent);
    const remaining = this.#end - this.#position + 1;
    if (remaining <= 0) {
      this.push(null);
      return;
    }
    const length = Math.min(remaining, READ_CHUNK_BYTES);
    const chunk = (this.#response && pool.pop()) || Buffer.allocUnsafeSlow(length);
    this.#handle.read(chunk, 0, length, this.#position).then(
      ({ bytesRead }) => {
        if (bytesRead === 0) {
          this.destroy(new Error('The file ended before the bytes asked for.'));
          return;
        }
        this.#position += bytesRead;
        if (this.#response && this.#lent.push(chunk) > LENT_LIMIT) this.#lent.shift();
        this.push(chunk.subarray(0, bytesRead));
      },
      (error: unknown) => this.destroy(error as Error),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#handle.close().then(
      () => callback(error),
      (closeError: unknown) => callback(error ?? (closeError as Error)),
    );
  }
}
