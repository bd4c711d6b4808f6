import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { StoredObject } from '../storage/blob-store.js';
import type { ServiceContext } from './context.js';
import { forgetOrphanVariants, recordedVariantKeys } from './image-variant-rows.js';

/**
 * Bytes younger than this are never judged: an upload may be streaming, or committed and about to
 * get its row. Anything older without a row was left by a crash or a failed removal.
 */
export const ORPHAN_MIN_AGE_MS = 60 * 60 * 1000;

export interface OrphanSweepResult {
  incompleteWritesRemoved: number;
  objectsRemoved: number;
}

async function referencedKeys(db: Kysely<Database>, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const rows = await db.selectFrom('files').select('storage_key').where('storage_key', 'in', keys).execute();
  return new Set(rows.map((row) => row.storage_key));
}

/** Of the entries a store says may hold a resumable upload's bytes, those whose upload still has state. */
async function ownedByUploads(db: Kysely<Database>, entries: ReadonlyArray<Pick<StoredObject, 'resumableId'>>): Promise<Set<string>> {
  const ids = entries.flatMap((entry) => (entry.resumableId ? [entry.resumableId] : []));
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('resumable_uploads').select('upload_id').where('upload_id', 'in', ids).execute();
  return new Set(rows.map((row) => row.upload_id));
}

/**
 * Removes the image variants whose file is gone, rows first (so no instance serves them again),
 * then their bytes; at any age: a variant is recorded only while its file exists, so one without
 * its file is left over, never about to be. Returns how many.
 */
export async function sweepOrphanVariants(ctx: Pick<ServiceContext, 'db' | 'storage'>): Promise<number> {
  let removed = 0;
  for (let batch = await forgetOrphanVariants(ctx.db); batch.length > 0; batch = await forgetOrphanVariants(ctx.db)) {
    await ctx.storage.remove(batch);
    removed += batch.length;
  }
  return removed;
}

/**
 * Removes incomplete writes and stored objects without a row (of a file, an image variant or a
 * resumable upload), once they are older than `olderThanMs`; page by page, asking the database
 * about one page of keys at a time.
 */
export async function sweepOrphans(ctx: Pick<ServiceContext, 'db' | 'storage'>, olderThanMs = ORPHAN_MIN_AGE_MS): Promise<OrphanSweepResult> {
  const { db, storage } = ctx;
  const cutoff = Date.now() - olderThanMs;
  const result: OrphanSweepResult = { incompleteWritesRemoved: 0, objectsRemoved: 0 };
  const owned = (entry: Pick<StoredObject, 'resumableId'>, uploads: Set<string>) => entry.resumableId !== undefined && uploads.has(entry.resumableId);
  for await (const page of storage.listIncompleteWrites()) {
    const old = page.filter((write) => write.startedAt.getTime() < cutoff);
    const uploads = await ownedByUploads(db, old);
    const stale = old.filter((write) => !owned(write, uploads)).map((write) => write.id);
    await storage.removeIncompleteWrites(stale);
    result.incompleteWritesRemoved += stale.length;
  }
  for await (const page of storage.listObjects()) {
    const old = page.filter((object) => object.modifiedAt.getTime() < cutoff);
    if (old.length === 0) continue;
    const keys = old.map((object) => object.key);
    const [referenced, uploads, variants] = await Promise.all([referencedKeys(db, keys), ownedByUploads(db, old), recordedVariantKeys(db, keys)]);
    const orphans = old.filter((object) => !referenced.has(object.key) && !owned(object, uploads) && !variants.has(object.key)).map((object) => object.key);
    await storage.remove(orphans);
    result.objectsRemoved += orphans.length;
  }
  return result;
}
