import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { sweepExpired } from '../services/expiry.js';
import type { BlobStore } from '../storage/blob-store.js';
import type { Job } from './schedule.js';

/**
 * Every instance sweeps; they share the work safely. Not at start-up: expired files are invisible
 * already, and a fleet restarting together need not sweep all at once.
 */
export function expirySweepJob(db: Kysely<Database>, storage: BlobStore, intervalSeconds: number, log: FastifyBaseLogger): Job {
  return {
    name: 'expiry-sweep',
    intervalMs: intervalSeconds * 1000,
    runAtStart: false,
    run: () =>
      sweepExpired(db, (keys) =>
        // Bytes left behind have no row any more: the orphan sweep removes them later.
        storage.remove(keys).catch((error: unknown) => log.error({ err: error }, 'bytes of expired files were not removed')),
      ),
  };
}
