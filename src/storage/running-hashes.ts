import { LRUCache } from 'lru-cache';
import { Sha256 } from './sha256-threads.js';

/** How many uploads' hashes one process keeps; past it, the least recently extended go. */
const MAX_ENTRIES = 1000;

/**
 * The sha256 of the first `size` bytes of resumable uploads whose every acknowledged byte passed
 * through this process, so that completion need not read the whole file again to hash it (bench
 * case resumable-large, against UploadFile of the same size). Only a head start:
 * an upload served in part by another instance, or whose bytes on disk differ from what was
 * hashed, has no entry here and is hashed from its file.
 */
export class RunningHashes {
  /** A hash pushed out unused is dropped, so its thread lets go of its state. */
  readonly #entries = new LRUCache<string, { size: number; hash: Sha256 }>({
    max: MAX_ENTRIES,
    dispose: (entry, _id, reason) => {
      if (reason === 'evict') entry.hash.drop();
    },
  });

  /** The hash to extend with the bytes appended at `offset`, or undefined when this process does not know the bytes before it. */
  take(id: string, offset: number): Sha256 | undefined {
    const entry = this.#entries.get(id);
    this.#entries.delete(id);
    if (entry?.size === offset && offset > 0) return entry.hash;
    entry?.hash.drop();
    return offset === 0 ? new Sha256() : undefined;
  }

  /** After an append: `hash` covers exactly the first `size` bytes, now durable. */
  keep(id: string, size: number, hash: Sha256): void {
    this.#entries.set(id, { size, hash });
  }

  /** The finished upload's size and hex digest, when known; forgets it either way. */
  async finish(id: string): Promise<{ size: number; sha256: string } | undefined> {
    const entry = this.#entries.get(id);
    this.#entries.delete(id);
    // A hash lost with its thread is only a head start lost: the bytes are hashed where they lie.
    const sha256 = await entry?.hash.digest().catch(() => undefined);
    return entry && sha256 !== undefined ? { size: entry.size, sha256 } : undefined;
  }

  forget(ids: readonly string[]): void {
    for (const id of ids) {
      this.#entries.get(id)?.hash.drop();
      this.#entries.delete(id);
    }
  }
}
