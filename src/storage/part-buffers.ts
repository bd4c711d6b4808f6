/**
 * The memory of multipart uploads' parts, shared by every upload of an instance.
 *
 * A part is assembled by copying the request's chunks into a buffer of the part size as they
 * arrive, and that buffer is used again once the store has the part. Chunks kept in a list until a
 * part was full outlived the young collections that run while bytes arrive, and only full
 * collections freed them: a full collection every 10 MiB or so, 40 % of the service's CPU on S3
 * uploads.
 *
 * Parts in flight to the store are limited across uploads, so the instance's memory stays bounded
 * however many uploads run at once: each upload still has at most its concurrency of parts (the
 * one being filled included), and an upload whose next part finds every slot taken waits for one,
 * its request held back meanwhile.
 */
export class PartSlots {
  #sending = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(readonly slots: number) {}

  /** Resolves once a part may be sent; release() gives the slot back. */
  async acquire(): Promise<void> {
    while (this.#sending >= this.slots) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#sending += 1;
  }

  release(): void {
    this.#sending -= 1;
    this.#waiting.shift()?.();
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

  take(): Buffer {
    this.#lent += 1;
    clearTimeout(this.#dropSpares);
    return this.#spares.pop() ?? Buffer.allocUnsafeSlow(this.size);
  }

  give(buffer: Buffer): void {
    this.#lent -= 1;
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

/** One upload's next part, filled in a buffer of `buffers`. */
export class PartAssembler {
  #buffer: Buffer | undefined;
  #length = 0;

  constructor(private readonly buffers: PartBuffers) {}

  get length(): number {
    return this.#length;
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
    this.#buffer ??= this.buffers.take();
    const copied = bytes.copy(this.#buffer, this.#length);
    this.#length += copied;
    return bytes.subarray(copied);
  }

  /** The part so far, to send; the assembler starts a new one. */
  take(): PartBody {
    const buffer = this.#buffer ?? this.buffers.take();
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
}
