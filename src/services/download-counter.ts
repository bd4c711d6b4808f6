import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

/**
 * Completed downloads, counted in memory and added to `files.download_times` in one statement per
 * flush, so a download costs no database write. Counts in flight stay visible through pending()
 * until their flush has settled, and a failed flush puts them back for the next one.
 */
export class DownloadCounter {
  #pending = new Map<number, number>();
  #inFlight = new Map<number, number>();
  /** When the oldest count of each map was recorded, for the flush lag. */
  #pendingSince: number | undefined;
  #inFlightSince: number | undefined;
  /** Flushes run one after another, so a batch is never written twice or out of order. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: Kysely<Database>) {}

  record(fileKey: number): void {
    this.#pendingSince ??= Date.now();
    this.#pending.set(fileKey, (this.#pending.get(fileKey) ?? 0) + 1);
  }

  /** Downloads of this file on this instance that a read of the database may not show yet. */
  pending(fileKey: number): number {
    return (this.#pending.get(fileKey) ?? 0) + (this.#inFlight.get(fileKey) ?? 0);
  }

  /** Seconds since the oldest count not yet in the database was recorded; 0 when all are written. */
  lagSeconds(): number {
    const since = Math.min(this.#pendingSince ?? Infinity, this.#inFlightSince ?? Infinity);
    return since === Infinity ? 0 : (Date.now() - since) / 1000;
  }

  /** Writes what is pending; resolves with the number of files updated (rows of deleted files are gone, not an error). */
  flush(): Promise<number> {
    const run = this.#queue.then(() => this.#flushOnce());
    this.#queue = run.catch(() => {});
    return run;
  }

  async #flushOnce(): Promise<number> {
    if (this.#pending.size === 0) return 0;
    this.#inFlight = this.#pending;
    this.#inFlightSince = this.#pendingSince;
    this.#pending = new Map();
    this.#pendingSince = undefined;
    // Ascending keys: concurrent flushes of other instances tend to lock rows in the same order.
    const keys = [...this.#inFlight.keys()].sort((a, b) => a - b);
    const counts = keys.map((key) => this.#inFlight.get(key)!);
    try {
      const result = await sql`
        UPDATE files SET download_times = download_times + u.n
        FROM unnest(${keys}::bigint[], ${counts}::bigint[]) AS u(file_key, n)
        WHERE files.file_key = u.file_key`.execute(this.db);
      return Number(result.numAffectedRows ?? 0);
    } catch (error) {
      for (const [key, n] of this.#inFlight) this.#pending.set(key, (this.#pending.get(key) ?? 0) + n);
      this.#pendingSince = Math.min(this.#inFlightSince ?? Infinity, this.#pendingSince ?? Infinity);
      throw error;
    } finally {
      this.#inFlight = new Map();
      this.#inFlightSince = undefined;
    }
  }
}
