import { createHash, type Hash } from 'node:crypto';

/** How many uploads' hashes one process keeps; past it, the least recently extended go. */
const MAX_ENTRIES = 1000;

/**
 * The sha256 of the first `size` bytes of resumable uploads whose every acknowledged byte passed
 * through this process, so that completion need not read a GiB again to hash it. Only a head start:
 * an upload served in part by another instance, or whose bytes on disk differ from what was
 * hashed, has no entry here and is hashed from its file.
 */
export class RunningHashes {
  readonly #entries = new Map<string, { size: number; hash: Hash }>();

  /** The hash to extend with the bytes appended at `offset`, or undefined when this process does not know the bytes before it. */
  take(id: string, offset: number): Hash | undefined {
    const entry = this.#entries.get(id);
    this.#entries.delete(id);
    if (offset === 0) return createHash('sha256');
    return entry?.size === offset ? entry.hash : undefined;
  }

  /** After an append: `hash` covers exactly the first `size` bytes, now durable. */
  keep(id: string, size: number, hash: Hash): void {
    this.#entries.set(id, { size, hash });
    if (this.#entries.size > MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
  }

  /** The finished upload's size and hex digest, when known; forgets it either way. */
  finish(id: string): { size: number; sha256: string } | undefined {
    const entry = this.#entries.get(id);
    this.#entries.delete(id);
    return entry && { size: entry.size, sha256: entry.hash.digest('hex') };
  }

  forget(ids: readonly string[]): void {
    for (const id of ids) this.#entries.delete(id);
  }
}
