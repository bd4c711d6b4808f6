import type { Readable } from 'node:stream';
import type { ExpressionBuilder, Kysely, SqlBool } from 'kysely';
import { compiledOnce } from '../../db/compiled-once.js';
import { isDatabaseError } from '../../db/errors.js';
import type { Database, NewFile } from '../../db/schema.js';
import { refused } from '../errors.js';
import type { BlobWrite } from '../storage/blob-store.js';
import { dropBytes, type ServiceContext } from './context.js';
import { isLive } from './files.js';
import { fileExtension } from './file-names.js';
import { hashSecret } from './secret-hashing.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** A bucket the uploading app may write into, found by authorizeUpload(). */
export interface UploadBucket {
  readonly bucketId: number;
  readonly bucketName: string;
}

/** Where an upload goes and for how long: known once the upload is authorized and its fields read. */
export interface UploadTarget extends UploadBucket {
  readonly fileName: string;
  readonly aliveDays: number;
}

export interface StoredFile {
  readonly fileKey: number;
  readonly fileName: string;
  readonly bucketName: string;
  readonly size: number;
}

/** Whether a live file holds `fileName` in the bucket of the outer query. */
function nameTaken(eb: ExpressionBuilder<Database, 'buckets'>, fileName: string) {
  return eb
    .exists(
      eb
        .selectFrom('files')
        .select('file_key')
        .whereRef('files.bucket_id', '=', 'buckets.bucket_id')
        .where('files.real_file_name', '=', fileName)
        .where(isLive()),
    )
    .as('name_taken');
}

/** The refusals of an upload into `bucket` by `appId`, in the order clients see them. */
function uploadBucket(bucketId: number, appId: string, bucket: { name: string | null; app_id: string | null; open_to_upload: boolean | null; name_taken: SqlBool } | undefined): UploadBucket {
  if (!bucket || bucket.name === null) throw refused.unknownBucket();
  if (bucket.app_id !== appId && !bucket.open_to_upload) throw refused.uploadNotAllowed();
  if (bucket.name_taken) throw refused.fileNameTaken();
  return { bucketId, bucketName: bucket.name };
}

/**
 * The bucket an app may upload into (its own, or any that is OpenToUpload), in one query that also
 * refuses early when a live file holds the name; the insert remains the authority for races.
 */
export async function authorizeUpload(db: Kysely<Database>, appId: string, bucketId: number, fileName: string | undefined): Promise<UploadBucket> {
  const bucket = await db
    .selectFrom('buckets')
    .select(['name', 'app_id', 'open_to_upload'])
    .select((eb) => nameTaken(eb, fileName ?? ''))
    .where('bucket_id', '=', bucketId)
    .executeTakeFirst();
  return uploadBucket(bucketId, appId, bucket);
}

const tokenUploadBucket = compiledOnce((db, bucketId: number, fileName: string, tokenHash: string, now: Date) =>
  db
    .selectFrom('access_tokens')
    .leftJoin('buckets', (join) => join.on('buckets.bucket_id', '=', bucketId))
    .select(['access_tokens.app_id as token_app_id', 'buckets.name', 'buckets.app_id', 'buckets.open_to_upload'])
    // The bucket is left-joined (a missing one is told apart from a bad token): the same subquery.
    .select((eb) => nameTaken(eb as unknown as ExpressionBuilder<Database, 'buckets'>, fileName))
    .where('access_tokens.token_hash', '=', tokenHash)
    .where('access_tokens.expires_at', '>', now),
);

/**
 * authorizeUpload() for the holder of an AccessToken, with the token checked in the same query (an
 * upload costs one round trip less), and the token's app. A bad, expired or revoked token is
 * refused before anything is said about the bucket.
 */
export async function authorizeTokenUpload(
  db: Kysely<Database>,
  accessToken: string,
  bucketId: number,
  fileName: string | undefined,
): Promise<UploadBucket & { appId: string }> {
  const [row] = await tokenUploadBucket(db, bucketId, fileName ?? '', hashSecret(accessToken), new Date());
  if (!row) throw refused.invalidToken();
  return { ...uploadBucket(bucketId, row.token_app_id, row), appId: row.token_app_id };
}

/**
 * The upload flow, for every way a file comes in: the bytes stream into the store (metered, never
 * past maxBytes); then the target is decided (a multipart form may carry its fields after the
 * file); then the bytes are made durable and the row is committed. Whatever fails, nothing is left.
 */
export async function storeUpload(
  ctx: ServiceContext,
  source: Readable,
  options: { maxBytes: number; lengthAtMost?: number; target: () => Promise<UploadTarget> },
): Promise<StoredFile> {
  const written = await ctx.storage.write(source, { maxBytes: options.maxBytes, lengthAtMost: options.lengthAtMost });
  let target: UploadTarget;
  try {
    target = await options.target();
  } catch (error) {
    await written.abort();
    throw error;
  }
  return commitUpload(ctx, written, target);
}

/**
 * Makes written bytes a file: durable under their key first, then the row, so no row ever names
 * bytes that could be lost. If the row cannot be written the bytes are removed. An expired file
 * holding the same name gives way to the new one.
 */
export async function commitUpload(ctx: ServiceContext, written: BlobWrite, target: UploadTarget): Promise<StoredFile> {
  let fileKey: number;
  let replaced: string[];
  try {
    await written.commit();
    ({ fileKey, replaced } = await insertFile(ctx.db, fileRow(written, target)));
  } catch (error) {
    await written.abort();
    throw error;
  }
  await dropBytes(ctx, replaced);
  return { fileKey, fileName: target.fileName, bucketName: target.bucketName, size: written.size };
}

/** The columns an upload sets; the key and the download count take their defaults. */
type UploadRow = Omit<NewFile, 'file_key' | 'download_times'>;

function fileRow(written: BlobWrite, target: UploadTarget): UploadRow {
  const uploadTime = new Date();
  return {
    bucket_id: target.bucketId,
    real_file_name: target.fileName,
    file_extension: fileExtension(target.fileName),
    size_bytes: written.size,
    upload_time: uploadTime,
    alive_days: target.aliveDays,
    expires_at: new Date(uploadTime.getTime() + target.aliveDays * DAY_MS),
    storage_key: written.key,
    sha256: written.sha256,
  };
}

const insertFileRow = compiledOnce(
  (db, bucketId: number, name: string, extension: string, size: number, uploadTime: Date, aliveDays: number, expiresAt: Date, storageKey: string, sha256: string) =>
    db
      .insertInto('files')
      .values({
        bucket_id: bucketId,
        real_file_name: name,
        file_extension: extension,
        size_bytes: size,
        upload_time: uploadTime,
        alive_days: aliveDays,
        expires_at: expiresAt,
        storage_key: storageKey,
        sha256,
      })
      .returning('file_key'),
);

/** The row of an upload, through the insert compiled once; `db` may be a transaction. */
function insertRow(db: Kysely<Database>, row: UploadRow) {
  return insertFileRow(db, row.bucket_id, row.real_file_name, row.file_extension, row.size_bytes, row.upload_time, row.alive_days, row.expires_at, row.storage_key, row.sha256);
}

/** One statement on the common path; only a name clash takes the slower path of replaceExpiredHolder(). */
async function insertFile(db: Kysely<Database>, row: UploadRow): Promise<{ fileKey: number; replaced: string[] }> {
  try {
    const [inserted] = await insertRow(db, row);
    return { fileKey: inserted!.file_key, replaced: [] };
  } catch (error) {
    // The bucket was deleted while the body streamed in.
    if (isDatabaseError(error, 'foreign-key-violation')) throw refused.unknownBucket();
    if (!isDatabaseError(error, 'unique-violation')) throw error;
  }
  return replaceExpiredHolder(db, row);
}

/**
 * The name is held: by a live file, the upload is refused; by an expired one, that file gives way.
 * One transaction, so two uploads racing for an expired name cannot both take it.
 */
async function replaceExpiredHolder(db: Kysely<Database>, row: UploadRow): Promise<{ fileKey: number; replaced: string[] }> {
  try {
    return await db.transaction().execute(async (trx) => {
      const expired = await trx
        .deleteFrom('files')
        .where('bucket_id', '=', row.bucket_id)
        .where('real_file_name', '=', row.real_file_name)
        .where('expires_at', '<=', row.upload_time)
        .returning('storage_key')
        .execute();
      if (expired.length === 0) throw refused.fileNameTaken();
      const [inserted] = await insertRow(trx, row);
      return { fileKey: inserted!.file_key, replaced: expired.map((r) => r.storage_key) };
    });
  } catch (error) {
    // Another upload took the name in the meantime.
    if (isDatabaseError(error, 'unique-violation')) throw refused.fileNameTaken();
    if (isDatabaseError(error, 'foreign-key-violation')) throw refused.unknownBucket();
    throw error;
  }
}
