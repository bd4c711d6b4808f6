import { refused, type ApiError } from '../errors.js';

/**
 * Per-app admission of heavy work (contract section 18): at most `concurrency` heavy requests of
 * one app run at once on this instance; the app's next ones wait in a queue of its own, in order,
 * and past `queue` waiting (or after `queueTimeoutMs` in it) they are refused with Retry-After.
 * One app's flood therefore never takes more than its share of the database pool and the event
 * loop, and every other app's work goes past it. A waiting request holds nothing but a promise.
 */

export interface AdmissionLimits {
  /** Heavy requests of one app running at once. */
  readonly concurrency: number;
  /** Requests of one app waiting for a turn; 0 refuses at once when all its turns are taken. */
  readonly queue: number;
  /** How long a request may wait for its turn before it is refused. */
  readonly queueTimeoutMs: number;
  /** The refusal past the queue; an app over its turns by default (429). */
  readonly busy?: () => ApiError;
}

/**
 * What became of a request, for /metrics: `admitted` counts every start (at once or after
 * waiting), `queued` every request that had to wait; a waiting one ends admitted, `timed_out`, or
 * `abandoned` when its caller went away. `refused` found the app's queue full.
 */
/** The kinds of heavy work, each with turns of its own: listings and deletions, uploads, image renders. */
export type AdmittedWork = 'requests' | 'uploads' | 'images';

export type AdmissionOutcome = 'admitted' | 'queued' | 'refused' | 'timed_out' | 'abandoned';

/** Ends the turn; calling it again does nothing. */
export type Release = () => void;

/** Seconds a refused client is told to wait: about the time a listing or a purge takes. */
export const ADMISSION_RETRY_AFTER_SECONDS = 2;

interface Waiter {
  /** Hands the turn over. */
  start(): void;
}

interface Share {
  running: number;
  readonly waiting: Waiter[];
}

export class Admission {
  /** Only apps with work running or waiting: the map stays as small as the load. */
  private readonly shares = new Map<string, Share>();
  private running = 0;
  private waiting = 0;

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly onOutcome: (outcome: AdmissionOutcome) => void = () => {},
  ) {}

  #busy(): ApiError {
    return this.limits.busy?.() ?? refused.appBusy(ADMISSION_RETRY_AFTER_SECONDS);
  }

  /** Heavy requests running and waiting right now, over all apps. */
  load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting };
  }

  /**
   * Resolves with the release of a turn once the app may run one more heavy request. Rejects with
   * the 429 refusal when the app's queue is full or the wait is too long, and with the signal's
   * reason when it aborts first (the caller went away), leaving the queue at once.
   */
  admit(appId: string, signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) {
      this.onOutcome('abandoned');
      return Promise.reject(signal.reason);
    }
    let share = this.shares.get(appId);
    if (!share) {
      share = { running: 0, waiting: [] };
      this.shares.set(appId, share);
    }
    if (share.running < this.limits.concurrency) return Promise.resolve(this.start(appId, share));
    if (share.waiting.length >= this.limits.queue) {
      this.onOutcome('refused');
      return Promise.reject(this.#busy());
    }
    const current = share;
    return new Promise<Release>((resolve, reject) => {
      const leave = (outcome: AdmissionOutcome, error: unknown) => {
        current.waiting.splice(current.waiting.indexOf(waiter), 1);
        this.waiting--;
        this.forget(appId, current);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.onOutcome(outcome);
        reject(error);
      };
      const onAbort = () => leave('abandoned', signal!.reason);
      const timer = setTimeout(() => leave('timed_out', this.#busy()), this.limits.queueTimeoutMs);
      const waiter: Waiter = {
        start: () => {
          this.waiting--;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(this.start(appId, current));
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      current.waiting.push(waiter);
      this.waiting++;
      this.onOutcome('queued');
    });
  }

  private start(appId: string, share: Share): Release {
    share.running++;
    this.running++;
    this.onOutcome('admitted');
    let released = false;
    return () => {
      if (released) return;
      released = true;
      share.running--;
      this.running--;
      // The turn goes to the app's oldest waiter; other apps never wait for it.
      const next = share.waiting.shift();
      if (next) next.start();
      else this.forget(appId, share);
    };
  }

  private forget(appId: string, share: Share): void {
    if (share.running === 0 && share.waiting.length === 0) this.shares.delete(appId);
  }
}
