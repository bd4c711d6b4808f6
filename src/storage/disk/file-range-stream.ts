import type { FileHandle } from 'node:fs/promises';
import { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';

/** Read chunks of 1 MiB: Node's default 16 KiB chunks make large downloads (bench cases download-large, download-1m) far slower. */
const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * The bytes start..end (inclusive) of an open file, closed when the stream ends or is destroyed.
 *
 * Piped into an HTTP response, it writes the response itself: one positional read of up to 1 MiB,
 * one write, and no next read until the socket has drained, so a download holds one chunk however
 * slow its reader, and a client that goes away stops the reads. Any other destination, or a reader
 * that iterates, gets the same chunks through the usual stream machinery.
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
      const chunk = Buffer.allocUnsafeSlow(length);
      const { bytesRead } = await this.#handle.read(chunk, 0, length, this.#position);
      if (bytesRead === 0) throw new Error('The file ended before the bytes asked for.');
      if (this.destroyed || response.destroyed) return void this.destroy();
      this.#position += bytesRead;
      const more = response.write(chunk.subarray(0, bytesRead));
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
