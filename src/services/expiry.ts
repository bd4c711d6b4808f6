import { sql } from 'kysely';
import { dropBytes, type ServiceContext } from './context.js';
import { deleteExpiredTokens } from './tokens.js';

export const SWEEP_BATCH_SIZE = 500;

export interface SweepResult {
  files: number;
  tokens: number;
  secrets: number;
}

/**
 * Removes expired files (rows first, then their bytes), expired access tokens and used-up download
 * secrets. Files go in batches, each its own short statement; rows another instance is deleting at
 * the same moment are skipped (SKIP LOCKED), so concurrent sweepers neither wait on nor fail over
 * each other, and each row is deleted, and counted, by exactly one of them.
 */
export async function sweepExpired(ctx: ServiceContext, batchSize = SWEEP_BATCH_SIZE): Promise<SweepResult> {
  const { db } = ctx;
  let files = 0;
  for (;;) {
    const { rows } = await sql<{ storage_key: string }>`
      DELETE FROM files WHERE file_key IN (
        SELECT file_key FROM files WHERE expires_at <= now()
        ORDER BY expires_at LIMIT ${batchSize} FOR UPDATE SKIP LOCKED)
      RETURNING storage_key`.execute(db);
    // The rows are committed away: the bytes can never be served again, whatever happens to them.
    await dropBytes(ctx, rows.map((row) => row.storage_key));
    files += rows.length;
    if (rows.length < batchSize) break;
  }
  const tokens = await deleteExpiredTokens(db);
  // A used-up secret can never serve again; secrets of expired files went with them (cascade).
  const secrets = await db.deleteFrom('download_secrets').where('uses_left', '<=', 0).executeTakeFirst();
  return { files, tokens, secrets: Number(secrets.numDeletedRows) };
}
