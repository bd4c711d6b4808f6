import { sql } from 'kysely';
import { dropBytes, type ServiceContext } from './context.js';

/** Rows per statement when a bucket's files are removed: a short statement, a bounded list of keys. */
export const PURGE_BATCH_SIZE = 1000;

/**
 * Removes a bucket's files a batch at a time, each batch its own short statement (rows first, so
 * their bytes are never served again, then the bytes), until none is left. Other requests keep
 * being answered meanwhile: no lock is held between batches and only one batch of keys is in memory.
 * Files uploaded while it runs (behind the batches) are left to the caller's final transaction.
 */
export async function purgeBucketFiles(ctx: ServiceContext, bucketId: number, batchSize = PURGE_BATCH_SIZE): Promise<number> {
  let removed = 0;
  // Each batch starts after the last key removed, through files_bucket_file_key: the index entries
  // of rows already removed stay until a vacuum, and a scan from the start would walk all of them.
  let after = 0;
  for (;;) {
    const { rows } = await sql<{ file_key: number; storage_key: string }>`
      DELETE FROM files WHERE file_key IN (
        SELECT file_key FROM files WHERE bucket_id = ${bucketId} AND file_key > ${after} ORDER BY file_key LIMIT ${batchSize})
      RETURNING file_key, storage_key`.execute(ctx.db);
    if (rows.length === 0) return removed;
    await dropBytes(ctx, rows.map((row) => row.storage_key));
    removed += rows.length;
    after = Math.max(after, ...rows.map((row) => Number(row.file_key)));
  }
}
