import { createHash } from 'node:crypto';
import { finished, Transform, type Readable } from 'node:stream';
import { StorageError } from './errors.js';
import { PASS_HIGH_WATER_MARK } from './high-water-marks.js';
import { freshBytesArrived } from './young-collections.js';

/** Counts and hashes the bytes that pass; refuses the first byte past maxBytes before passing it on. */
export class Meter extends Transform {
  size = 0;
  readonly #hash = createHash('sha256');

  constructor(readonly maxBytes: number) {
    super({ highWaterMark: PASS_HIGH_WATER_MARK });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null, data?: Buffer) => void): void {
    this.size += chunk.length;
    freshBytesArrived(chunk.length);
    if (this.size > this.maxBytes) return done(new StorageError('too-large', `more than ${this.maxBytes} bytes`));
    this.#hash.update(chunk);
    done(null, chunk);
  }

  /** Hex; call once, after the last byte. */
  sha256(): string {
    return this.#hash.digest('hex');
  }
}

/**
 * `source` piped into a new Meter. pipeline(source, …) would destroy the source on failure, and a
 * destroyed multipart file stream stops the parsing of the request that still has to be answered;
 * so the source is piped by hand, its failure fails the meter, and when the meter fails the source
 * is unpiped and left flowing so nothing upstream waits for a reader that is gone.
 */
export function meter(source: Readable, maxBytes: number): Meter {
  const metered = new Meter(maxBytes);
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
