import type { FileHandle } from 'node:fs/promises';
import { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';

/** Read chunks of 1 MiB: Node's default 16 KiB chunks make large downloads about three times slower. */
const READ_CHUNK_BYTES = 1024 * 1024;
/** Chunks kept for reuse across downloads; a download that finds none free reads into a fresh one. */
const POOL_CHUNKS = 8;
const WASM_PAGE_BYTES = 64 * 1024;
/** The WebAssembly memory constructor, which @types/node 20 does not declare. */
const WasmMemory = (globalThis as unknown as { WebAssembly: { Memory: new (descriptor: { initial: number }) => { readonly buffer: ArrayBuffer } } }).WebAssembly.Memory;

/**
 * The reused chunks, carved from one WebAssembly memory on the first download: its bytes start on a
 * page boundary, so every chunk does. glibc maps a buffer of 1 MiB on pages of its own, its bytes
 * starting 16 bytes past a page boundary, and on this project's AMD EPYC machines the kernel copies
 * the page cache into memory 16 bytes past the offset it copies from three to four times slower
 * (1.2–1.5 against 3.6–5.2 GiB/s in a probe): a service's large downloads were fast or slow
 * depending on how its first chunks happened to be mapped.
 */
let pool: { memory: InstanceType<typeof WasmMemory>; free: Buffer[] } | undefined;

function takeChunk(length: number): Buffer {
  if (!pool) {
    const memory = new WasmMemory({ initial: (POOL_CHUNKS * READ_CHUNK_BYTES) / WASM_PAGE_BYTES });
    pool = { memory, free: Array.from({ length: POOL_CHUNKS }, (_, i) => Buffer.from(memory.buffer, i * READ_CHUNK_BYTES, READ_CHUNK_BYTES)) };
  }
  return pool.free.pop() ?? Buffer.allocUnsafeSlow(length);
}

/** Pooled chunks go back to the pool; others are left to the GC. */
function recycle(chunk: Buffer): void {
  if (chunk.buffer === pool?.memory.buffer) pool.free.push(chunk);
}

/**
 * The bytes start..end (inclusive) of an open file, closed when the stream ends or is destroyed.
 *
 * Piped into an HTTP response, it writes the response itself, one chunk at a time, into chunks
 * that are reused once the socket has taken them (the write's callback): a fresh 1 MiB buffer per
 * read costs a garbage collection every few dozen MiB, and once the heap's old generation is near
 * its limit, a full one, which halved large downloads in a service that had been busy; a reader
 * slower than the disk left every chunk to the collector. Any other destination, or a reader that
 * iterates, gets fresh chunks through the usual stream machinery, since it might keep them.
 */
export class FileRangeStream extends Readable {
  readonly #handle: FileHandle;
  readonly #end: number;
  #position: number;
  #writing = false;

  constructor(handle: FileHandle, start: number, end: number) {
    super({ highWaterMark: READ_CHUNK_BYTES });
    this.#handle = handle;
    this.#position = start;
    this.#end = end;
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    if (!(destination instanceof ServerResponse) || this.#writing || this.readableFlowing !== null) return super.pipe(destination, options);
    this.#writing = true;
    this.#writeTo(destination, options?.end !== false).catch((error: unknown) => this.destroy(error as Error));
    return destination;
  }

  /**
   * Reads and writes until the range is sent, waiting for the response to drain; stops when either
   * side is destroyed (a client that went away stops the reads). The stream ends before the
   * response does, so whoever watches it sees a finished source, not one cut short.
   */
  async #writeTo(response: ServerResponse, end: boolean): Promise<void> {
    while (this.#position <= this.#end) {
      if (this.destroyed || response.destroyed) return void this.destroy();
      const length = Math.min(this.#end - this.#position + 1, READ_CHUNK_BYTES);
      const chunk = takeChunk(length);
      const { bytesRead } = await this.#handle.read(chunk, 0, length, this.#position);
      if (bytesRead === 0) throw new Error('The file ended before the bytes asked for.');
      if (this.destroyed || response.destroyed) return void this.destroy();
      this.#position += bytesRead;
      // Called once the socket has taken the bytes, or failed to: either way the chunk is free.
      const more = response.write(chunk.subarray(0, bytesRead), () => recycle(chunk));
      if (!more) await drained(response);
    }
    this.push(null);
    this.resume();
    // Ended and closed (its file with it): a watcher that destroys an unfinished source when the
    // response finishes must find this one finished.
    await finished(this);
    if (end) response.end();
  }

  override _read(): void {
    const remaining = this.#end - this.#position + 1;
    if (remaining <= 0) {
      this.push(null);
      return;
    }
    const length = Math.min(remaining, READ_CHUNK_BYTES);
    const chunk = Buffer.allocUnsafeSlow(length);
    this.#handle.read(chunk, 0, length, this.#position).then(
      ({ bytesRead }) => {
        if (bytesRead === 0) {
          this.destroy(new Error('The file ended before the bytes asked for.'));
          return;
        }
        this.#position += bytesRead;
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

/** Resolves when the response wants more, or is gone. */
function drained(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.on('drain', done);
    response.on('close', done);
  });
}
