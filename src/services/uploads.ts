import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { failure } from '../errors.js';
import type { IncomingBlob, RemoveBlobs } from '../storage/blob-store.js';
import { UNKNOWN_BUCKET_MESSAGE } from './buckets.js';
import { isLive } from './files.js';
import { fileExtension } from './file-names.js';

export const NAME_TAKEN = 'There already exists a file with that name.';
export const UPLOAD_NOT_ALLOWED = 'You may not upload into this bucket.';
const DAY_MS = 24 * 60 * 60 * 1000;
const UNIQUE_VIOLATION = '23505';

export interface UploadTarget {
  bucketId: number;
  bucketName: string;
}

/** The bucket an app may upload into: its own, or any that is OpenToUpload. */
export async function authorizeUpload(db: Kysely<Database>, appId: string, bucketId: number): Promise<UploadTarget> {
  const bucket = await db
    .selectFrom('buckets')
    .select(['name', 'app_id', 'open_to_upload'])
    .where('bucket_id', '=', bucketId)
    .executeTakeFirst();
  if (!bucket) throw failure(UNKNOWN_BUCKET_MESSAGE);
  if (bucket.app_id !== appId && !bucket.open_to_upload) throw failure(UPLOAD_NOT_ALLOWED);
  return { bucketId, bucketName: bucket.name };
}

/** Refuses early when a live file already holds the name; the insert remains the authority for races. */
export async function assertNameFree(db: Kysely<Database>, bucketId: number, fileName: string): Promise<void> {
  const holder = await db
    .selectFrom('files')
    .select('file_key')
    .where('bucket_id', '=', bucketId)
    .where('real_file_name', '=', fileName)
    .where(isLive)
    .executeTakeFirst();
  if (holder) throw failure(NAME_TAKEN);
}

export interface StoredUpload {
  fileKey: number;
  fileName: string;
  bucketName: string;
}

/**
 * Makes an upload durable and visible, in that order: fsync and rename the bytes, then commit the
 * row. If the row cannot be written the bytes are removed, so a refused upload leaves nothing.
 * An expired file holding the same name gives way to the new one.
 */
export async function storeUpload(
  db: Kysely<Database>,
  removeBlobs: RemoveBlobs,
  input: { target: UploadTarget; blob: IncomingBlob; fileName: string; aliveDays: number },
): Promise<StoredUpload> {
  const { target, blob, fileName, aliveDays } = input;
  await blob.commit();
  let replaced: string[];
  let fileKey: number;
  try {
    const uploadTime = new Date();
    ({ fileKey, replaced } = await db.transaction().execute(async (trx) => {
      const expired = await trx
        .deleteFrom('files')
        .where('bucket_id', '=', target.bucketId)
        .where('real_file_name', '=', fileName)
        .where('expires_at', '<=', uploadTime)
        .returning('storage_key')
        .execute();
      const row = await trx
        .insertInto('files')
        .values({
          bucket_id: target.bucketId,
          real_file_name: fileName,
          file_extension: fileExtension(fileName),
          size_bytes: blob.size,
          upload_time: uploadTime,
          alive_days: aliveDays,
          expires_at: new Date(uploadTime.getTime() + aliveDays * DAY_MS),
          storage_key: blob.storageKey,
          sha256: blob.sha256,
        })
        .returning('file_key')
        .executeTakeFirstOrThrow();
      return { fileKey: row.file_key, replaced: expired.map((r) => r.storage_key) };
    }));
  } catch (error) {
    await blob.discard();
    if ((error as { code?: string }).code === UNIQUE_VIOLATION) throw failure(NAME_TAKEN);
    // The bucket was deleted while the body streamed in.
    if ((error as { code?: string }).code === '23503') throw failure(UNKNOWN_BUCKET_MESSAGE);
    throw error;
  }
  await removeBlobs(replaced);
  return { fileKey, fileName, bucketName: target.bucketName };
}
