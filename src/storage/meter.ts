import { finished, Transform, type Readable } from 'node:stream';
import { StorageError } from './errors.js';
import { PASS_HIGH_WATER_MARK } from './high-water-marks.js';
import { Sha256 } from './sha256-threads.js';

/**
 * Counts and hashes the bytes that pass; refuses the first byte past maxBytes before passing it on.
 * It ends only once the hash of every byte is known.
 */
export class Meter extends Transform {
  size = 0;
  readonly #hash: Sha256;
  #sha256: string | undefined;

  /** `lengthAtMost`: the most bytes the source can hold, when known beforehand (a request's length). */
  constructor(
    readonly maxBytes: number,
    lengthAtMost?: number,
  ) {
    super({ highWaterMark: PASS_HIGH_WATER_MARK });
    this.#hash = new Sha256(lengthAtMost);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null, data?: Buffer) => void): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) return done(new StorageError('too-large', `more than ${this.maxBytes} bytes`));
    const behind = this.#hash.update(chunk);
    if (behind) behind.then(() => done(null, chunk), done);
    else done(null, chunk);
  }

  override _flush(done: (error?: Error | null) => void): void {
    this.#hash.digest().then((hex) => {
      this.#sha256 = hex;
      done();
    }, done);
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    if (this.#sha256 === undefined) this.#hash.drop();
    done(error);
  }

  /** Hex, once the meter has ended. */
  sha256(): string {
    if (this.#sha256 === undefined) throw new Error('The meter has not ended: its sha256 is not known yet.');
    return this.#sha256;
  }
}

/**
 * `source` piped into a new Meter. pipeline(source, …) would destroy the source on failure, and a
 * destroyed multipart file stream stops the parsing of the request that still has to be answered;
 * so the source is piped by hand, its failure fails the meter, and when the meter fails the source
 * is unpiped and left flowing so nothing upstream waits for a reader that is gone.
 */
export function meter(source: Readable, maxBytes: number, lengthAtMost?: number): Meter {
  const metered = new Meter(maxBytes, lengthAtMost);
  const stopWatching = finished(source, { writable: false }, (error) => {
    if (error) metered.destroy(error);
  });
  metered.once('close', () => {
    stopWatching();
    if (metered.writableFinished) return;
    source.unpipe(metered);
    if (!source.destroyed) {
      source.on('error', () => {});
      source.resume();
    }
  });
  source.pipe(metered);
  return metered;
}
