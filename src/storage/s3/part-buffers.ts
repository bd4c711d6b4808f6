/**
 * The memory of multipart uploads' parts, shared by every upload of an instance
 * (S3_UPLOAD_MEMORY_BYTES): parts being filled and parts in flight to the store count alike.
 *
 * A part is assembled by copying the request's chunks into a buffer of the part size as they
 * arrive, and that buffer is used again once the store has the part. Chunks kept in a list until a
 * part was full outlived the young collections that run while bytes arrive, and only full
 * collections freed them, often enough to take much of the CPU of an S3 upload (bench case
 * s3-large: its upload rate and its peak RSS of 3 uploads at once).
 *
 * An upload takes a buffer to fill only while the instance holds fewer than `slots`, or when it
 * holds none itself (nothing being filled, nothing in flight). So every upload can always go on, a
 * part at a time, and the instance holds at most `slots` parts plus one for each other upload
 * running at once; a slow client holds only the part it fills, and the others wait only for parts
 * of their own in flight. An upload that must wait stops reading: its request is held back, not
 * buffered.
 */
export class PartSlots {
  #taken = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(readonly slots: number) {}

  /** Resolves once a buffer may be taken, and counts it: at once while there is room or while `idle()` (the upload holds none). */
  async reserve(idle: () => boolean): Promise<void> {
    while (this.#taken >= this.slots && !idle()) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#taken += 1;
  }

  /** A buffer is back: every waiting upload looks again (one may have become idle, not only first in line). */
  release(): void {
    this.#taken -= 1;
    for (const wake of this.#waiting.splice(0)) wake();
  }
}

/** Spare buffers are dropped once no upload has used one for this long: an idle instance gives the memory back. */
const KEEP_SPARES_MS = 10_000;

/** Buffers of one part size; at most as many spares as there are slots. */
export class PartBuffers {
  readonly #spares: Buffer[] = [];
  #lent = 0;
  #dropSpares: NodeJS.Timeout | undefined;

  constructor(
    readonly size: number,
    readonly slots: PartSlots,
  ) {}

  /** A buffer, once the slots allow one (see PartSlots); `idle()` tells whether the upload holds none. */
  async take(idle: () => boolean): Promise<Buffer> {
    await this.slots.reserve(idle);
    this.#lent += 1;
    clearTimeout(this.#dropSpares);
    return this.#spares.pop() ?? Buffer.allocUnsafeSlow(this.size);
  }

  give(buffer: Buffer): void {
    this.#lent -= 1;
    this.slots.release();
    if (this.#spares.length < this.slots.slots) this.#spares.push(buffer);
    if (this.#lent === 0) this.#dropSpares = setTimeout(() => (this.#spares.length = 0), KEEP_SPARES_MS).unref();
  }
}

/** A part to send: its bytes, and what frees their memory once the store has them (or failed to take them). */
export interface PartBody {
  readonly bytes: Buffer;
  done(): void;
}

/** Bytes that are not in a reused buffer (a tail read back from the store) as a part. */
export function plainPart(bytes: Buffer): PartBody {
  return { bytes, done: () => {} };
}

/** One upload's next part, filled in a buffer of `buffers` that reserve() obtains first. */
export class PartAssembler {
  #buffer: Buffer | undefined;
  #length = 0;

  constructor(private readonly buffers: PartBuffers) {}

  get length(): number {
    return this.#length;
  }

  /** Whether the part has its buffer, so that add() may be called. */
  get reserved(): boolean {
    return this.#buffer !== undefined;
  }

  /** Waits for the part's buffer; `idle()` tells whether the upload holds no other part (see PartSlots). */
  async reserve(idle: () => boolean): Promise<void> {
    this.#buffer ??= await this.buffers.take(idle);
  }

  /** The bytes of the part so far: a view, valid until take(). */
  get filled(): Buffer {
    return this.#buffer?.subarray(0, this.#length) ?? Buffer.alloc(0);
  }

  get full(): boolean {
    return this.#length === this.buffers.size;
  }

  /** Copies as much of `bytes` as the part has room for; the rest is returned. */
  add(bytes: Buffer): Buffer {
    const buffer = this.#reservedBuffer();
    const copied = bytes.copy(buffer, this.#length);
    this.#length += copied;
    return bytes.subarray(copied);
  }

  /** The part so far, to send; the assembler starts a new one, for which reserve() is needed again. */
  take(): PartBody {
    const buffer = this.#reservedBuffer();
    const bytes = buffer.subarray(0, this.#length);
    this.#buffer = undefined;
    this.#length = 0;
    let given = false;
    return {
      bytes,
      done: () => {
        if (given) return;
        given = true;
        this.buffers.give(buffer);
      },
    };
  }

  /** A copy of the part so far, for a body kept beyond the upload; the buffer goes back. */
  copy(): Buffer {
    if (!this.#buffer) return Buffer.alloc(0);
    const part = this.take();
    const copy = Buffer.from(part.bytes);
    part.done();
    return copy;
  }

  /** Gives the buffer back unsent (the upload failed). */
  release(): void {
    if (this.#buffer) this.take().done();
  }

  #reservedBuffer(): Buffer {
    if (!this.#buffer) throw new Error('The part has no buffer yet: reserve() first.');
    return this.#buffer;
  }
}
