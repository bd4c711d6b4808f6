import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { forgetOrphanVariants, recordedVariantKeys } from '../services/image-variant-rows.js';
import type { BlobStore } from '../storage/blob-store.js';
import type { Job } from './schedule.js';

/**
 * Bytes younger than this are never judged: an upload may be streaming, or committed and about to
 * get its row. Anything older without a row was left by a crash or a failed removal.
 */
export const ORPHAN_MIN_AGE_MS = 60 * 60 * 1000;
const ORPHAN_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

export interface OrphanSweepResult {
  incompleteWritesRemoved: number;
  objectsRemoved: number;
}

async function referencedKeys(db: Kysely<Database>, keys: readonly string[]): Promise<Set<string>> {
  const rows = await db.selectFrom('files').select('storage_key').where('storage_key', 'in', keys).execute();
  return new Set(rows.map((row) => row.storage_key));
}

/**
 * On S3 a resumable upload's bytes are a multipart upload begun at its final key, which is its id:
 * it lives as long as the upload, for days if the client pauses, not as long as one request.
 */
async function resumableUploadKeys(db: Kysely<Database>, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const rows = await db.selectFrom('resumable_uploads').select('upload_id').where('upload_id', 'in', keys).execute();
  return new Set(rows.map((row) => row.upload_id));
}

/**
 * Removes the image variants whose file is gone, rows first (so no instance serves them again),
 * then their bytes; at any age: a variant is recorded only while its file exists, so one without
 * its file is left over, never about to be. Returns how many.
 */
export async function sweepOrphanVariants(db: Kysely<Database>, storage: BlobStore): Promise<number> {
  let removed = 0;
  for (let batch = await forgetOrphanVariants(db); batch.length > 0; batch = await forgetOrphanVariants(db)) {
    await storage.remove(batch);
    removed += batch.length;
  }
  return removed;
}

/**
 * Removes incomplete writes and stored objects without a row (of a file, an image variant or a
 * resumable upload), once they are older than `olderThanMs`; page by page, asking the database
 * about one page of keys at a time.
 */
export async function sweepOrphans(db: Kysely<Database>, storage: BlobStore, olderThanMs = ORPHAN_MIN_AGE_MS): Promise<OrphanSweepResult> {
  const cutoff = Date.now() - olderThanMs;
  const result: OrphanSweepResult = { incompleteWritesRemoved: 0, objectsRemoved: 0 };
  for await (const page of storage.listIncompleteWrites()) {
    const old = page.filter((write) => write.startedAt.getTime() < cutoff);
    const resumable = await resumableUploadKeys(db, old.flatMap((write) => (write.key ? [write.key] : [])));
    const stale = old.filter((write) => !write.key || !resumable.has(write.key)).map((write) => write.id);
    await storage.removeIncompleteWrites(stale);
    result.incompleteWritesRemoved += stale.length;
  }
  for await (const page of storage.listObjects()) {
    const old = page.filter((object) => object.modifiedAt.getTime() < cutoff).map((object) => object.key);
    if (old.length === 0) continue;
    // A resumable upload completed on S3 is dated by its start, and has its file row only once it is hashed.
    const [referenced, resumable, variants] = await Promise.all([referencedKeys(db, old), resumableUploadKeys(db, old), recordedVariantKeys(db, old)]);
    const orphans = old.filter((key) => !referenced.has(key) && !resumable.has(key) && !variants.has(key));
    await storage.remove(orphans);
    result.objectsRemoved += orphans.length;
  }
  return result;
}

export function orphanSweepJob(db: Kysely<Database>, storage: BlobStore): Job {
  return {
    name: 'orphan-sweep',
    intervalMs: ORPHAN_SWEEP_INTERVAL_MS,
    runAtStart: true,
    run: async () => ({ variantsRemoved: await sweepOrphanVariants(db, storage), ...(await sweepOrphans(db, storage)) }),
  };
}
