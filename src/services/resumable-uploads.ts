import type { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database, ResumableUploadRow } from '../../db/schema.js';
import type { ResumableBytes } from '../storage/resumable-bytes.js';
import type { ServiceContext } from './context.js';
import { authorizeUpload, commitUpload, type StoredFile } from './uploads.js';

/**
 * Resumable uploads, free of the tus wire format: their state in PostgreSQL (so any instance
 * serves any request), their bytes in the storage backend, and at the end the one upload flow.
 */

export interface ResumableTarget {
  readonly appId: string;
  readonly bucketId: number;
  readonly fileName: string;
  readonly aliveDays: number;
  readonly size: number;
  /** The client's Upload-Metadata, kept to echo it on HEAD. */
  readonly metadata: Record<string, string | null>;
}

/** Every column of the row, by name: a prepared statement keeps its result when a migration adds a column. */
const RESUMABLE_UPLOAD_COLUMNS = [
  'upload_id',
  'app_id',
  'bucket_id',
  'file_name',
  'alive_days',
  'size_bytes',
  'offset_bytes',
  'metadata',
  'created_at',
  'expires_at',
  'lock_token',
  'locked_until',
  'lock_count',
  'completing_since',
] as const;

export interface ResumableContext extends ServiceContext {
  readonly resumable: ResumableBytes;
  /** An incomplete upload expires this long after its last PATCH. */
  readonly expiryMs: number;
}

/** 128 random bits: the upload's URL is its capability, so it must not be guessable. */
export function newUploadId(): string {
  return randomBytes(16).toString('hex');
}

export async function createResumable(ctx: ResumableContext, uploadId: string, target: ResumableTarget): Promise<ResumableUploadRow> {
  await ctx.resumable.create(uploadId);
  return ctx.db
    .insertInto('resumable_uploads')
    .values({
      upload_id: uploadId,
      app_id: target.appId,
      bucket_id: target.bucketId,
      file_name: target.fileName,
      alive_days: target.aliveDays,
      size_bytes: target.size,
      metadata: JSON.stringify(target.metadata),
      expires_at: new Date(Date.now() + ctx.expiryMs),
    })
    .returning(RESUMABLE_UPLOAD_COLUMNS)
    .executeTakeFirstOrThrow();
}

/** The upload, expired or not; undefined once it is gone, or being turned into a file. */
export async function findResumable(db: Kysely<Database>, uploadId: string): Promise<ResumableUploadRow | undefined> {
  return db.selectFrom('resumable_uploads').select(RESUMABLE_UPLOAD_COLUMNS).where('upload_id', '=', uploadId).where('completing_since', 'is', null).executeTakeFirst();
}

/**
 * Appends a PATCH body. Whatever happens to the request, the bytes that reached the store durably
 * are recorded as the new offset (a dropped connection resumes after them), and the expiry moves on.
 * Given the token of the lock the request holds, the same update releases it: one commit less per PATCH.
 * `bodyBytes` is the request's declared length, when it has one.
 */
export async function appendResumable(
  ctx: ResumableContext,
  row: ResumableUploadRow,
  source: Readable,
  request: { lockToken?: string; bodyBytes?: number } = {},
): Promise<{ offset: number; expiresAt: Date }> {
  const { lockToken, bodyBytes } = request;
  let offset: number;
  try {
    // The row's lock count is this request's only when the row was read under its lock.
    offset = await ctx.resumable.append(row.upload_id, row.offset_bytes, source, { bodyBytes, lockCount: lockToken ? row.lock_count : undefined });
  } catch (error) {
    await throwIfGone(ctx, row.upload_id);
    throw error;
  }
  const expiresAt = new Date(Date.now() + ctx.expiryMs);
  // Under a lock, the offset is this request's to record only while the lock is still its own (a
  // lease lost in a stall may have let another request write since), and recording it gives the
  // lock back in the same commit.
  const updated = await ctx.db
    .updateTable('resumable_uploads')
    .set({ offset_bytes: offset, expires_at: expiresAt, ...(lockToken && { lock_token: null, locked_until: null }) })
    .where('upload_id', '=', row.upload_id)
    .$if(lockToken !== undefined, (query) => query.where('lock_token', '=', lockToken!))
    .executeTakeFirst();
  if (updated.numUpdatedRows === 0n) {
    await throwIfGone(ctx, row.upload_id);
    if (lockToken) throw new ResumableLockLost(row.upload_id);
  }
  return { offset, expiresAt };
}

/**
 * The upload was deleted while a request wrote to it (its bucket or app went, or it was
 * terminated): what the request may have stored after the deletion removed the bytes is removed
 * too, and the request is refused as for an upload that does not exist.
 */
async function throwIfGone(ctx: ResumableContext, uploadId: string): Promise<void> {
  const row = await ctx.db.selectFrom('resumable_uploads').select('upload_id').where('upload_id', '=', uploadId).executeTakeFirst();
  if (row) return;
  await ctx.resumable.remove([uploadId]).catch((error: unknown) => ctx.log.error({ err: error }, 'resumable upload bytes were not removed'));
  throw new ResumableGone(uploadId);
}

/** The upload is gone: deleted with its bucket or app, terminated, or swept. */
export class ResumableGone extends Error {
  constructor(readonly uploadId: string) {
    super(`Resumable upload ${uploadId} no longer exists.`);
    this.name = 'ResumableGone';
  }
}

/**
 * Within a deletion's transaction: the incomplete uploads into `bucketIds`, and those begun by
 * `appId` when it is the app being deleted, lose their rows; their ids are returned so that their
 * bytes are removed once the transaction has committed.
 */
export async function takeResumablesOf(trx: Kysely<Database>, owners: { bucketIds: readonly number[]; appId?: string }): Promise<string[]> {
  if (owners.bucketIds.length === 0 && owners.appId === undefined) return [];
  const rows = await trx
    .deleteFrom('resumable_uploads')
    .where((eb) =>
      eb.or([
        ...(owners.bucketIds.length > 0 ? [eb('bucket_id', 'in', owners.bucketIds)] : []),
        ...(owners.appId !== undefined ? [eb('app_id', '=', owners.appId)] : []),
      ]),
    )
    .returning('upload_id')
    .execute();
  return rows.map((row) => row.upload_id);
}

/** After a deletion has committed: the bytes of the uploads it took. A failure is the orphan sweep's to finish. */
export async function dropResumableBytes(ctx: ServiceContext, uploadIds: readonly string[]): Promise<void> {
  if (uploadIds.length === 0) return;
  await ctx.resumable.remove(uploadIds).catch((error: unknown) => ctx.log.error({ err: error, count: uploadIds.length }, 'resumable upload bytes were not removed'));
}

/** The request's lease on an upload ran out and another request took it: its offset was not recorded. */
export class ResumableLockLost extends Error {
  constructor(readonly uploadId: string) {
    super(`The lock on resumable upload ${uploadId} was lost before its offset was recorded.`);
    this.name = 'ResumableLockLost';
  }
}

/** Termination, expiry, or the end of a completion: state first, then bytes. */
export async function removeResumable(ctx: ResumableContext, uploadIds: readonly string[]): Promise<void> {
  if (uploadIds.length === 0) return;
  await ctx.db.deleteFrom('resumable_uploads').where('upload_id', 'in', uploadIds).execute();
  await ctx.resumable.remove(uploadIds).catch((error: unknown) => ctx.log.error({ err: error, count: uploadIds.length }, 'resumable upload bytes were not removed'));
}

/**
 * The last byte arrived: the upload becomes a file through the same flow as UploadFile (the target
 * is authorized again, for the app that created the upload: its token may have expired since),
 * and the upload's own state and bytes go. A refusal (the name was taken meanwhile) removes them too.
 */
export async function completeResumable(ctx: ResumableContext, uploadId: string): Promise<StoredFile | undefined> {
  // Claimed by marking its state: of two requests that both reached the end, one completes it. The
  // row stays until the end: an incomplete multipart upload (or an object without a file row) that
  // is older than an hour would otherwise be the orphan sweeps' to remove while it is completed.
  const row = await ctx.db
    .updateTable('resumable_uploads')
    .set({ completing_since: sql<Date>`now()` })
    .where('upload_id', '=', uploadId)
    .where('completing_since', 'is', null)
    .whereRef('offset_bytes', '=', 'size_bytes')
    .returning(RESUMABLE_UPLOAD_COLUMNS)
    .executeTakeFirst();
  if (!row) return undefined;
  try {
    const bucket = await authorizeUpload(ctx.db, row.app_id, row.bucket_id, row.file_name);
    const written = await ctx.resumable.finish(row.upload_id, { maxBytes: row.size_bytes });
    return await commitUpload(ctx, written, { ...bucket, fileName: row.file_name, aliveDays: row.alive_days });
  } finally {
    // Bytes first, then the state; a row left by a failure here expires, and the sweep removes it.
    await ctx.resumable.remove([row.upload_id]).catch((error: unknown) => ctx.log.error({ err: error }, 'resumable upload bytes were not removed'));
    await ctx.db
      .deleteFrom('resumable_uploads')
      .where('upload_id', '=', row.upload_id)
      .execute()
      .catch((error: unknown) => ctx.log.error({ err: error }, 'resumable upload state was not removed'));
  }
}

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

/** How long a lock holds without renewal: an instance that dies mid-PATCH blocks its upload at most this long. */
export const LOCK_LEASE_MS = 10_000;
const leaseEnd = sql<Date>`now() + ${`${LOCK_LEASE_MS} milliseconds`}::interval`;

/**
 * Takes the upload's lock if it is free (or its lease ran out); the row when taken. A lease in the
 * row rather than a held connection or advisory lock: a PATCH streams for minutes, and the
 * embedded database has a single connection.
 */
export async function tryLockResumable(db: Kysely<Database>, uploadId: string, lockToken: string): Promise<ResumableUploadRow | 'busy' | 'missing'> {
  const row = await db
    .updateTable('resumable_uploads')
    .set({ lock_token: lockToken, locked_until: leaseEnd, lock_count: sql<number>`lock_count + 1` })
    .where('upload_id', '=', uploadId)
    .where((eb) => eb.or([eb('lock_token', 'is', null), eb('locked_until', '<', sql<Date>`now()`), eb('lock_token', '=', lockToken)]))
    .returning(RESUMABLE_UPLOAD_COLUMNS)
    .executeTakeFirst();
  if (row) return row;
  return (await findResumable(db, uploadId)) ? 'busy' : 'missing';
}

/** Extends a lock the token still holds; never takes one that was released meanwhile. */
export async function renewLockResumable(db: Kysely<Database>, uploadId: string, lockToken: string): Promise<void> {
  await db.updateTable('resumable_uploads').set({ locked_until: leaseEnd }).where('upload_id', '=', uploadId).where('lock_token', '=', lockToken).execute();
}

export async function unlockResumable(db: Kysely<Database>, uploadId: string, lockToken: string): Promise<void> {
  await db
    .updateTable('resumable_uploads')
    .set({ lock_token: null, locked_until: null })
    .where('upload_id', '=', uploadId)
    .where('lock_token', '=', lockToken)
    .execute();
}
