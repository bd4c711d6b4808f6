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
  /** Flushes run one after another, so a batch is never written twice or out of order. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: Kysely<Database>) {}

  record(fileKey: number): void {
    this.#pending.set(fileKey, (this.#pending.get(fileKey) ?? 0) + 1);
  }

  /** Downloads of this file on this instance that a read of the database may not show yet. */
  pending(fileKey: number): number {
    return (this.#pending.get(fileKey) ?? 0) + (this.#inFlight.get(fileKey) ?? 0);
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
    this.#pending = new Map();
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
      throw error;
    } finally {
      this.#inFlight = new Map();
    }
  }
}
