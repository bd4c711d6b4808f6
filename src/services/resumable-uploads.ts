import { randomBytes } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import { sql, type Kysely } from 'kysely';
import type { Database, ResumableUploadRow } from '../../db/schema.js';
import { resumableRefused } from '../errors.js';
import type { ServiceContext } from './context.js';
import { holdResumableLock } from './resumable-locks.js';
import { RESUMABLE_UPLOAD_COLUMNS } from './resumable-rows.js';
import { authorizeUpload, commitUpload, type StoredFile } from './uploads.js';

export { findResumable } from './resumable-rows.js';

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

export interface ResumableContext extends ServiceContext {
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

/**
 * Appends a PATCH body. Whatever happens to the request, the bytes that reached the store durably
 * are recorded as the new offset (a dropped connection resumes after them), and the expiry moves on.
 * Given the token of the lock the request holds, the same update releases it: one commit less per PATCH.
 * `bodyBytes` is the request's declared length, when it has one.
 */
async function appendResumable(
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
    // The lease ran out in a stall and another request took the lock: it may have written since.
    // The client asks HEAD for the offset and sends the rest again, as after any 423.
    if (lockToken) throw resumableRefused.locked();
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
  throw resumableRefused.notFound();
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


/** What one PATCH (or a creation with its first bytes) brings, as the request declared it. */
export interface ResumablePatch {
  /** Where its bytes start: the client's Upload-Offset. */
  readonly offset: number;
  readonly source: Readable;
  /** The declared length of its body, when it has one. */
  readonly bodyBytes?: number;
  /** Aborts once the client has gone away: waiting for the lock stops. */
  readonly signal?: AbortSignal;
  /** Waits for the uploading app's turn (per-app admission), once the lock names the app. */
  readonly admit?: (appId: string) => Promise<void>;
}

export interface PatchOutcome {
  readonly offset: number;
  readonly size: number;
  readonly expiresAt: Date;
}

/**
 * Appends a request's bytes under the upload's lock; once the offset reaches the size, the caller
 * completes it (completeResumable). Refusals: 404 (unknown, or being completed), 410 (expired),
 * 409 (another offset), 413 (more bytes than the upload has left), 423 (locked by another request).
 */
export async function appendToResumable(ctx: ResumableContext, uploadId: string, patch: ResumablePatch): Promise<PatchOutcome> {
  const lock = await holdResumableLock(ctx, uploadId, patch.signal);
  const { row } = lock;
  let appended: { offset: number; expiresAt: Date };
  let exceeded: () => boolean;
  try {
    if (row.expires_at.getTime() <= Date.now()) throw resumableRefused.gone();
    if (row.offset_bytes !== patch.offset) throw resumableRefused.offsetConflict();
    await patch.admit?.(row.app_id);
    const left = row.size_bytes - row.offset_bytes;
    if (patch.bodyBytes !== undefined && patch.bodyBytes > left) throw resumableRefused.tooLong();
    const limited = atMost(patch.source, left);
    exceeded = () => limited.exceeded;
    appended = await appendResumable(ctx, row, limited, { lockToken: lock.token, bodyBytes: patch.bodyBytes });
    lock.givenBack();
  } finally {
    await lock.release();
  }
  // The bytes up to the end are kept (a client that asks HEAD resumes after them), the rest refused.
  if (exceeded()) throw resumableRefused.tooLong();
  return { offset: appended.offset, size: row.size_bytes, expiresAt: appended.expiresAt };
}

/** Passes on at most `limit` bytes of `source`; past them it ends it, as a client that went away would. */
function atMost(source: Readable, limit: number): Readable & { exceeded: boolean } {
  let passed = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (passed + chunk.length <= limit) {
        passed += chunk.length;
        return done(null, chunk);
      }
      limited.exceeded = true;
      if (passed < limit) this.push(chunk.subarray(0, limit - passed));
      passed = limit;
      done(new Error('more bytes than the upload has left'));
    },
  }) as Transform & { exceeded: boolean };
  limited.exceeded = false;
  source.on('error', (error) => limited.destroy(error));
  source.pipe(limited);
  return limited;
}
