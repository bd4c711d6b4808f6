import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { BlobStore } from '../storage/blob-store.js';
import type { Job } from './schedule.js';

/**
 * Bytes younger than this are never judged: an upload may be streaming, or renamed into place and
 * about to get its row. Anything older without a row was left by a crash or a failed removal.
 */
export const ORPHAN_MIN_AGE_MS = 60 * 60 * 1000;
const ORPHAN_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

export function sweepOrphans(db: Kysely<Database>, storage: BlobStore, olderThanMs = ORPHAN_MIN_AGE_MS) {
  return storage.sweepOrphans({
    olderThanMs,
    referenced: async (keys) => {
      const rows = await db.selectFrom('files').select('storage_key').where('storage_key', 'in', keys).execute();
      return new Set(rows.map((row) => row.storage_key));
    },
  });
}

export function orphanSweepJob(db: Kysely<Database>, storage: BlobStore): Job {
  return { name: 'orphan-sweep', intervalMs: ORPHAN_SWEEP_INTERVAL_MS, runAtStart: true, run: () => sweepOrphans(db, storage) };
}
