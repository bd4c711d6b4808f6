import { sql, type Kysely, type RawBuilder } from 'kysely';
import { compiledOnce } from '../../db/compiled-once.js';
import type { Database, FileRow } from '../../db/schema.js';
import { refused } from '../errors.js';
import { dropBytes, type ServiceContext } from './context.js';

export type FileWithBucket = FileRow & { bucket_name: string };

/** A file is gone from the instant it expires, whether or not the sweeper has removed it yet. */
export function isLive(table = 'files'): RawBuilder<boolean> {
  return sql<boolean>`${sql.ref(`${table}.expires_at`)} > now()`;
}

/** Every column of a file row, by name: a prepared statement keeps its result when a migration adds a column. */
const FILE_COLUMNS = [
  'files.file_key',
  'files.bucket_id',
  'files.real_file_name',
  'files.file_extension',
  'files.size_bytes',
  'files.download_times',
  'files.upload_time',
  'files.alive_days',
  'files.expires_at',
  'files.storage_key',
  'files.sha256',
] as const;

function filesWithBucket(db: Kysely<Database>) {
  return db
    .selectFrom('files')
    .innerJoin('buckets', 'buckets.bucket_id', 'files.bucket_id')
    .select(FILE_COLUMNS)
    .select('buckets.name as bucket_name')
    .where(isLive());
}

// One array parameter: a single statement whatever the number of keys (see db/named-statements.ts).
const liveFilesAmong = compiledOnce((db, fileKeys: number[]) => filesWithBucket(db).where('files.file_key', '=', sql<number>`any(${fileKeys}::bigint[])`));

/** Live files among the keys, each once, in the order asked. */
export async function findLiveFiles(db: Kysely<Database>, fileKeys: readonly number[]): Promise<FileWithBucket[]> {
  const unique = [...new Set(fileKeys)];
  if (unique.length === 0) return [];
  const rows = await liveFilesAmong(db, unique);
  const byKey = new Map(rows.map((row) => [row.file_key, row]));
  return unique.flatMap((key) => byKey.get(key) ?? []);
}

export async function findLiveFile(db: Kysely<Database>, fileKey: number): Promise<FileWithBucket> {
  const [row] = await findLiveFiles(db, [fileKey]);
  if (!row) throw refused.fileNotFound();
  return row;
}

/** Rows per query when a bucket's files are listed: one page is all that is in memory at a time. */
export const LISTING_PAGE_SIZE = 500;

/** Refuses unless the app may list the bucket's files: its owner may, any app when it is OpenToRead. */
export async function authorizeListing(db: Kysely<Database>, appId: string, bucketId: number): Promise<void> {
  const bucket = await db
    .selectFrom('buckets')
    .select(['app_id', 'open_to_read'])
    .where('bucket_id', '=', bucketId)
    .executeTakeFirst();
  if (!bucket) throw refused.unknownBucket();
  if (bucket.app_id !== appId && !bucket.open_to_read) throw refused.notYourBucket();
}

/**
 * A bucket's live files ordered by FileKey, a page at a time: each page is one short query that
 * starts after the last key of the one before (through files_bucket_file_key), so no transaction
 * stays open while a slow client reads, and a huge bucket costs no more per page than a small one.
 */
export async function* liveFilePages(db: Kysely<Database>, bucketId: number, pageSize = LISTING_PAGE_SIZE): AsyncGenerator<FileWithBucket[]> {
  let after = 0;
  for (;;) {
    const page = await filesWithBucket(db)
      .where('files.bucket_id', '=', bucketId)
      .where('files.file_key', '>', after)
      .orderBy('files.file_key')
      .limit(pageSize)
      .execute();
    if (page.length > 0) yield page;
    if (page.length < pageSize) return;
    after = page[page.length - 1]!.file_key;
  }
}

/** Deletes one live file of the app's own buckets: the row first, so its bytes are never served again, then the bytes. */
export async function deleteFile(ctx: ServiceContext, appId: string, fileKey: number): Promise<void> {
  const row = await ctx.db
    .selectFrom('files')
    .innerJoin('buckets', 'buckets.bucket_id', 'files.bucket_id')
    .select(['buckets.app_id'])
    .where('files.file_key', '=', fileKey)
    .where(isLive())
    .executeTakeFirst();
  if (!row) throw refused.fileNotFound();
  if (row.app_id !== appId) throw refused.notYourBucket();
  const deleted = await ctx.db.deleteFrom('files').where('file_key', '=', fileKey).returning('storage_key').executeTakeFirst();
  // Deleted concurrently by another request: it is gone, which is what was asked.
  if (!deleted) throw refused.fileNotFound();
  await dropBytes(ctx, [deleted.storage_key]);
}
