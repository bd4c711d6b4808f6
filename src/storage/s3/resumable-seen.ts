import type { Part } from '@aws-sdk/client-s3';

/** Remembered parts and uploads across an instance, each counting one: about 100 bytes apiece. */
const REMEMBERED = 100_000;

/** An upload as an append left it in the store. */
export interface Seen {
  /** The upload's lock count while that append held the lock. */
  lockCount: number;
  /** The offset it answered: the parts and the tail. */
  size: number;
  uploadId: string;
  parts: Part[];
  partBytes: number;
  tailBytes: number;
}

/**
 * What this instance left of each upload at its last append. It still holds when no other request
 * has taken the upload's lock since (the lock count is one more) and the offset is the size it left:
 * a PATCH then sends its parts without listing the upload's parts first, a call that grows with the
 * upload (against Ceph RGW, 7 ms for 128 parts, 17 ms for 1,000, 40 ms for 2,000).
 */
export class LastSeenUploads {
  readonly #seen = new Map<string, Seen>();
  #weight = 0;

  /** What was seen of `id`, if it holds for a request with `lockCount` at `offset`; forgotten either way. */
  take(id: string, lockCount: number | undefined, offset: number): Seen | undefined {
    const seen = this.#seen.get(id);
    this.forget(id);
    return seen && lockCount === seen.lockCount + 1 && offset === seen.size ? seen : undefined;
  }

  remember(id: string, seen: Seen): void {
    this.forget(id);
    this.#seen.set(id, seen);
    this.#weight += weightOf(seen);
    // The oldest go first.
    for (const [oldest, entry] of this.#seen) {
      if (this.#weight <= REMEMBERED) break;
      this.#seen.delete(oldest);
      this.#weight -= weightOf(entry);
    }
  }

  forget(id: string): void {
    const seen = this.#seen.get(id);
    if (!seen) return;
    this.#seen.delete(id);
    this.#weight -= weightOf(seen);
  }
}

const weightOf = (seen: Seen) => seen.parts.length + 1;
