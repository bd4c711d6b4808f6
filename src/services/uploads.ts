import type { Kysely } from 'kysely';
import type { Database, NewFile } from '../../db/schema.js';
import { failure } from '../errors.js';
import type { IncomingBlob, RemoveBlobs } from '../storage/blob-store.js';
import { UNKNOWN_BUCKET_MESSAGE } from './buckets.js';
import { isLive } from './files.js';
import { fileExtension } from './file-names.js';

export const NAME_TAKEN = 'There already exists a file with that name.';
export const UPLOAD_NOT_ALLOWED = 'You may not upload into this bucket.';
const DAY_MS = 24 * 60 * 60 * 1000;
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

export interface UploadTarget {
  bucketId: number;
  bucketName: string;
}

/**
 * The bucket an app may upload into (its own, or any that is OpenToUpload), in one query that also
 * refuses early when a live file holds the name; the insert remains the authority for races.
 */
export async function authorizeUpload(
  db: Kysely<Database>,
  appId: string,
  bucketId: number,
  fileName: string | undefined,
): Promise<UploadTarget> {
  const bucket = await db
    .selectFrom('buckets')
    .select(['name', 'app_id', 'open_to_upload'])
    .select((eb) =>
      eb
        .exists(
          eb
            .selectFrom('files')
            .select('file_key')
            .whereRef('files.bucket_id', '=', 'buckets.bucket_id')
            .where('files.real_file_name', '=', fileName ?? '')
            .where(isLive),
        )
        .as('name_taken'),
    )
    .where('bucket_id', '=', bucketId)
    .executeTakeFirst();
  if (!bucket) throw failure(UNKNOWN_BUCKET_MESSAGE);
  if (bucket.app_id !== appId && !bucket.open_to_upload) throw failure(UPLOAD_NOT_ALLOWED);
  if (bucket.name_taken) throw failure(NAME_TAKEN);
  return { bucketId, bucketName: bucket.name };
}

/**
 * The name is held: by a live file, the upload is refused; by an expired one, that file gives way.
 * One transaction, so two uploads racing for an expired name cannot both take it.
 */
async function replaceExpiredHolder(db: Kysely<Database>, row: NewFile): Promise<{ fileKey: number; replaced: string[] }> {
  try {
    return await db.transaction().execute(async (trx) => {
      const expired = await trx
        .deleteFrom('files')
        .where('bucket_id', '=', row.bucket_id)
        .where('real_file_name', '=', row.real_file_name)
        .where('expires_at', '<=', row.upload_time)
        .returning('storage_key')
        .execute();
      if (expired.length === 0) throw failure(NAME_TAKEN);
      const inserted = await trx.insertInto('files').values(row).returning('file_key').executeTakeFirstOrThrow();
      return { fileKey: inserted.file_key, replaced: expired.map((r) => r.storage_key) };
    });
  } catch (error) {
    // Another upload took the name in the meantime.
    if ((error as { code?: string }).code === UNIQUE_VIOLATION) throw failure(NAME_TAKEN);
    throw error;
  }
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
  const uploadTime = new Date();
  const row = {
    bucket_id: target.bucketId,
    real_file_name: fileName,
    file_extension: fileExtension(fileName),
    size_bytes: blob.size,
    upload_time: uploadTime,
    alive_days: aliveDays,
    expires_at: new Date(uploadTime.getTime() + aliveDays * DAY_MS),
    storage_key: blob.storageKey,
    sha256: blob.sha256,
  };
  let fileKey: number;
  let replaced: string[] = [];
  try {
    // One statement on the common path; only a name clash takes the slower path below.
    fileKey = (await db.insertInto('files').values(row).returning('file_key').executeTakeFirstOrThrow()).file_key;
  } catch (error) {
    try {
      if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error;
      ({ fileKey, replaced } = await replaceExpiredHolder(db, row));
    } catch (failed) {
      await blob.discard();
      // The bucket was deleted while the body streamed in.
      if ((failed as { code?: string }).code === FOREIGN_KEY_VIOLATION) throw failure(UNKNOWN_BUCKET_MESSAGE);
      throw failed;
    }
  }
  await removeBlobs(replaced);
  return { fileKey, fileName, bucketName: target.bucketName };
}
