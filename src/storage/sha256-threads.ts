import { createHash, type Hash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

/**
 * sha256 of uploads, computed on threads of their own. On a CPU without SHA instructions one core
 * hashes about 300 MiB/s, and on the main thread the hash took half of its time while a file
 * streamed in: uploads ran at 150–180 MiB/s, and at 490 MiB/s without it. Off the main thread the
 * hash runs beside the parsing and the writing.
 */

/** Bytes copied into one message to a hashing thread: few enough messages, little held. */
const BATCH_BYTES = 256 * 1024;
/** Batches one hash may have waiting on its thread before its upload is held back. */
const MAX_BATCHES_IN_FLIGHT = 4;
/**
 * A hash that ends before its first batch is sent, with at most this many bytes, is computed on the
 * main thread: for a small upload the four messages to and from a thread, and the wake-ups of both
 * threads, cost more than hashing its bytes in place (tens of microseconds with SHA instructions).
 */
const HASHED_IN_PLACE_BYTES = 64 * 1024;
/**
 * A hash whose bytes are known to be at most this many (a request's Content-Length) is computed on
 * the main thread from its first byte. A 1 MiB upload sent four batches, and its thread's
 * wake-ups, copies and messages cost about as much as the hashing itself: in place, with SHA
 * instructions, 1 MiB uploads 8 at once took a seventh less CPU each, and 4 MiB ones up to a fifth
 * less. Larger bodies keep their thread, which hashes beside the parsing and the writing.
 */
export const HASHED_IN_PLACE_LENGTH = 4 * 1024 * 1024;
/** Batches handed back by the threads, kept for reuse instead of fresh allocations. */
const MAX_SPARE_BATCHES = 8;

// CommonJS, evaluated as the thread's whole program: no file to find beside this module, whether
// the service runs compiled or from its sources.
const THREAD_PROGRAM = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const hashes = new Map();
parentPort.on('message', (message) => {
  const { op, id } = message;
  if (op === 'update') {
    let hash = hashes.get(id);
    if (!hash) hashes.set(id, (hash = createHash('sha256')));
    hash.update(new Uint8Array(message.batch, 0, message.length));
    parentPort.postMessage({ op: 'hashed', id, batch: message.batch }, [message.batch]);
  } else if (op === 'digest') {
    const hash = hashes.get(id) ?? createHash('sha256');
    hashes.delete(id);
    parentPort.postMessage({ op: 'digest', id, hex: hash.digest('hex') });
  } else if (op === 'drop') {
    hashes.delete(id);
  }
});
`;

type Reply = { op: 'hashed'; id: number; batch: ArrayBuffer } | { op: 'digest'; id: number; hex: string };

const spareBatches: ArrayBuffer[] = [];

function takeBatch(): Buffer {
  const spare = spareBatches.pop();
  return spare ? Buffer.from(spare) : Buffer.allocUnsafeSlow(BATCH_BYTES);
}

function keepBatch(batch: ArrayBuffer): void {
  if (spareBatches.length < MAX_SPARE_BATCHES) spareBatches.push(batch);
}

/** One hashing thread and the hashes it holds; a thread that fails fails each of them, and is replaced. */
class HashThread {
  readonly #worker: Worker;
  readonly #hashes = new Map<number, Sha256>();
  /** Messages sent that await an answer: while there are any, the thread keeps the process alive. */
  #awaited = 0;
  failed = false;

  constructor() {
    // Its garbage is a few small objects per message: a young generation of 16 MB would be RSS for nothing.
    this.#worker = new Worker(THREAD_PROGRAM, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 2 } });
    this.#worker.unref();
    this.#worker.on('message', (reply: Reply) => this.#answered(reply));
    this.#worker.on('error', (error) => this.#fail(error));
    this.#worker.on('exit', (code) => this.#fail(new Error(`the hashing thread exited with code ${code}`)));
  }

  get load(): number {
    return this.#hashes.size;
  }

  open(hash: Sha256): void {
    this.#hashes.set(hash.id, hash);
  }

  send(message: { op: 'update'; id: number; batch: ArrayBuffer; length: number } | { op: 'digest' | 'drop'; id: number }): void {
    if (message.op === 'update') this.#worker.postMessage(message, [message.batch]);
    else this.#worker.postMessage(message);
    if (message.op === 'drop') {
      this.#hashes.delete(message.id);
      return;
    }
    if (this.#awaited++ === 0) this.#worker.ref();
  }

  #answered(reply: Reply): void {
    if (--this.#awaited === 0) this.#worker.unref();
    if (reply.op === 'hashed') keepBatch(reply.batch);
    const hash = this.#hashes.get(reply.id);
    if (reply.op === 'digest') this.#hashes.delete(reply.id);
    if (hash) hash.answered(reply);
  }

  #fail(error: Error): void {
    if (this.failed) return;
    this.failed = true;
    threads.splice(threads.indexOf(this), 1);
    for (const hash of this.#hashes.values()) hash.failed(error);
    this.#hashes.clear();
    void this.#worker.terminate();
  }
}

const threads: HashThread[] = [];
/** One thread per core but one, left to the main thread; at least one. */
const MAX_THREADS = Math.max(1, availableParallelism() - 1);
let lastId = 0;

/** The least busy thread, started on first use. */
function pickThread(): HashThread {
  if (threads.length < MAX_THREADS && threads.every((thread) => thread.load > 0)) threads.push(new HashThread());
  return threads.reduce((least, thread) => (thread.load < least.load ? thread : least));
}

/**
 * A sha256 whose bytes are hashed on another thread: update() copies them (the caller may reuse or
 * pass on its buffer), and asks its caller to wait when the thread is behind, so that what waits
 * to be hashed stays bounded. The thread is picked when the first batch is sent. Given a length of
 * at most HASHED_IN_PLACE_LENGTH, the bytes are hashed on the calling thread instead.
 */
export class Sha256 {
  readonly id = ++lastId;
  readonly #inPlace: Hash | undefined;
  #thread: HashThread | undefined;
  #batch: Buffer | undefined;
  #filled = 0;
  #inFlight = 0;
  #roomWaiter: { resolve: () => void; reject: (error: Error) => void } | undefined;
  #digest: { resolve: (hex: string) => void; reject: (error: Error) => void } | undefined;
  #error: Error | undefined;
  #closed = false;

  /** `lengthAtMost`: how many bytes at most will be added, when that is known beforehand. */
  constructor(lengthAtMost?: number) {
    if (lengthAtMost !== undefined && lengthAtMost <= HASHED_IN_PLACE_LENGTH) this.#inPlace = createHash('sha256');
  }

  /** Adds `bytes`; returns a promise when the caller should wait for it before adding more. */
  update(bytes: Buffer): Promise<void> | undefined {
    if (this.#closed) throw new Error('This hash is already digested or dropped.');
    if (this.#inPlace) {
      this.#inPlace.update(bytes);
      return undefined;
    }
    if (this.#error) return Promise.reject(this.#error);
    let offset = 0;
    while (offset < bytes.length) {
      this.#batch ??= takeBatch();
      const copied = bytes.copy(this.#batch, this.#filled, offset);
      this.#filled += copied;
      offset += copied;
      if (this.#filled === BATCH_BYTES) this.#sendBatch();
    }
    if (this.#inFlight < MAX_BATCHES_IN_FLIGHT) return undefined;
    return new Promise((resolve, reject) => (this.#roomWaiter = { resolve, reject }));
  }

  /** The hex digest of every byte added; the hash is done with after it. */
  digest(): Promise<string> {
    if (this.#closed) return Promise.reject(new Error('This hash is already digested or dropped.'));
    if (this.#inPlace) {
      this.#closed = true;
      return Promise.resolve(this.#inPlace.digest('hex'));
    }
    if (this.#error) return Promise.reject(this.#error);
    if (!this.#thread && this.#filled <= HASHED_IN_PLACE_BYTES) return Promise.resolve(this.#digestInPlace());
    if (this.#filled > 0) this.#sendBatch();
    this.#closed = true;
    this.#thread!.send({ op: 'digest', id: this.id });
    return new Promise((resolve, reject) => (this.#digest = { resolve, reject }));
  }

  /** Forgets the hash without a digest (the upload failed); its thread lets go of its state. */
  drop(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#batch) keepBatch(this.#batch.buffer as ArrayBuffer);
    this.#batch = undefined;
    if (!this.#error) this.#thread?.send({ op: 'drop', id: this.id });
  }

  #digestInPlace(): string {
    this.#closed = true;
    const hash = createHash('sha256');
    if (this.#batch) {
      hash.update(this.#batch.subarray(0, this.#filled));
      keepBatch(this.#batch.buffer as ArrayBuffer);
      this.#batch = undefined;
    }
    return hash.digest('hex');
  }

  #sendBatch(): void {
    const batch = this.#batch!;
    if (!this.#thread) {
      this.#thread = pickThread();
      this.#thread.open(this);
    }
    this.#thread.send({ op: 'update', id: this.id, batch: batch.buffer as ArrayBuffer, length: this.#filled });
    this.#batch = undefined;
    this.#filled = 0;
    this.#inFlight += 1;
  }

  /** For its thread: an answer to this hash. */
  answered(reply: Reply): void {
    if (reply.op === 'digest') {
      this.#digest?.resolve(reply.hex);
      return;
    }
    this.#inFlight -= 1;
    if (this.#inFlight >= MAX_BATCHES_IN_FLIGHT) return;
    const waiter = this.#roomWaiter;
    this.#roomWaiter = undefined;
    waiter?.resolve();
  }

  /** For its thread: it failed, and this hash with it. */
  failed(error: Error): void {
    this.#error = error;
    this.#roomWaiter?.reject(error);
    this.#digest?.reject(error);
    this.#roomWaiter = undefined;
  }
}
