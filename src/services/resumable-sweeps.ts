import { sql } from 'kysely';
import type { ResumableContext } from './resumable-uploads.js';

/** Incomplete uploads past their expiry, removed in batches; several instances may sweep at once. */
export async function sweepExpiredResumables(ctx: ResumableContext, batchSize = 500): Promise<number> {
  let removed = 0;
  for (;;) {
    const { rows } = await sql<{ upload_id: string }>`
      DELETE FROM resumable_uploads WHERE upload_id IN (
        SELECT upload_id FROM resumable_uploads WHERE expires_at <= now()
          AND (locked_until IS NULL OR locked_until < now())
        ORDER BY expires_at LIMIT ${batchSize} FOR UPDATE SKIP LOCKED)
      RETURNING upload_id`.execute(ctx.db);
    const ids = rows.map((r) => r.upload_id);
    await ctx.resumable.remove(ids).catch((error: unknown) => ctx.log.error({ err: error, count: ids.length }, 'resumable upload bytes were not removed'));
    removed += ids.length;
    if (rows.length < batchSize) return removed;
  }
}

/** Bytes younger than this are never judged orphans: their upload may be being created or completed. */
const ORPHAN_MIN_AGE_MS = 60 * 60 * 1000;

/**
 * Removes stored bytes of uploads that have no state (a crash between the two), once they are
 * older than `olderThanMs`; page by page.
 */
export async function sweepOrphanResumables(ctx: ResumableContext, olderThanMs = ORPHAN_MIN_AGE_MS): Promise<number> {
  const cutoff = Date.now() - olderThanMs;
  let removed = 0;
  for await (const page of ctx.resumable.list()) {
    const old = page.filter((entry) => entry.modifiedAt.getTime() < cutoff).map((entry) => entry.id);
    if (old.length === 0) continue;
    const rows = await ctx.db.selectFrom('resumable_uploads').select('upload_id').where('upload_id', 'in', old).execute();
    const known = new Set(rows.map((row) => row.upload_id));
    const orphans = old.filter((id) => !known.has(id));
    await ctx.resumable.remove(orphans);
    removed += orphans.length;
  }
  return removed;
}

