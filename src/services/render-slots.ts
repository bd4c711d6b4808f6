import { refused } from '../errors.js';

/** Seconds a client turned away is asked to wait: a render takes a fraction of one. */
export const RETRY_AFTER_SECONDS = 1;

/**
 * At most `concurrency` renders at once on this instance; up to `queueLength` more wait their
 * turn in order; beyond that a request is refused at once (503, Retry-After) rather than held.
 */
export class RenderSlots {
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(
    readonly concurrency: number,
    readonly queueLength: number,
  ) {}

  get running(): number {
    return this.#running;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** Runs `work` in a slot; throws the 503 refusal when every slot is taken and the queue is full. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#running >= this.concurrency) {
      if (this.#waiting.length >= this.queueLength) throw refused.imagesBusy(RETRY_AFTER_SECONDS);
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running += 1;
    }
    try {
      return await work();
    } finally {
      // The slot passes straight to the next in line, or is given back.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running -= 1;
    }
  }
}
