import { sql, type Kysely } from 'kysely';
import { isDatabaseError } from '../../db/errors.js';
import type { BucketRow, Database } from '../../db/schema.js';
import { problems, refused } from '../errors.js';
import { dropBytes, type ServiceContext } from './context.js';
import { purgeBucketFiles } from './purge.js';
import { dropResumableBytes, takeResumablesOf } from './resumable-uploads.js';

/**
 * Top-level path segments the service itself serves. A bucket name is the first segment of its
 * files' InternetPath, so a bucket may not take one of these (compared case-insensitively).
 */
export const RESERVED_BUCKET_NAMES: readonly string[] = [
  'API',
  'Admin',
  'Download',
  'Secret',
  'health',
  'ready',
  'metrics',
  'docs',
  'console',
  'favicon.ico',
  'robots.txt',
];

const RESERVED = new Set(RESERVED_BUCKET_NAMES.map((name) => name.toLowerCase()));
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
export const MAX_BUCKET_NAME_LENGTH = 25;
/** The unique index on lower(name): it decides between simultaneous creators. */
const NAME_INDEX = 'buckets_name_lower';

export function isReservedName(segment: string): boolean {
  return RESERVED.has(segment.toLowerCase());
}

/** The rule for BucketName and NewBucketName, as a `check` for the binding. */
export function bucketNameProblem(value: string, name: string): string | undefined {
  if (value.length < 5 || value.length > MAX_BUCKET_NAME_LENGTH) return problems.bucketNameLength(name);
  if (!NAME_PATTERN.test(value)) return problems.bucketNameCharacters(name);
  if (isReservedName(value)) return problems.bucketNameReserved(name, value);
  return undefined;
}

/** A bucket with its count of live files. */
export interface Bucket {
  readonly bucketId: number;
  readonly name: string;
  readonly openToRead: boolean;
  readonly openToUpload: boolean;
  readonly appId: string;
  readonly fileCount: number;
}

type BucketColumns = Pick<BucketRow, 'bucket_id' | 'name' | 'open_to_read' | 'open_to_upload' | 'app_id'>;

function bucketOf(row: BucketColumns, fileCount: number | string | bigint | null): Bucket {
  return {
    bucketId: row.bucket_id,
    name: row.name,
    openToRead: row.open_to_read,
    openToUpload: row.open_to_upload,
    appId: row.app_id,
    fileCount: Number(fileCount ?? 0),
  };
}

export interface BucketSettings {
  name: string;
  openToRead: boolean;
  openToUpload: boolean;
}

/** Turns a violation of the unique index on lower(name) into the protocol's refusal. */
function refuseNameClash(error: unknown): never {
  if (isDatabaseError(error, 'unique-violation', NAME_INDEX)) throw refused.bucketNameTaken();
  throw error;
}

function selectBuckets(db: Kysely<Database>) {
  return db
    .selectFrom('buckets as b')
    .select(['b.bucket_id', 'b.name', 'b.open_to_read', 'b.open_to_upload', 'b.app_id'])
    // The kept count of rows (the sum of the bucket's slots), less those expired and not swept yet:
    // expired files count as gone everywhere. The second term reads only the bucket's expired rows
    // (files_bucket_expires_at).
    .select(
      sql<number>`(SELECT coalesce(sum(c.n), 0) FROM bucket_file_counts c WHERE c.bucket_id = b.bucket_id)::bigint
        - (SELECT count(*) FROM files f WHERE f.bucket_id = b.bucket_id AND f.expires_at <= now())`.as('file_count'),
    );
}

export async function createBucket(db: Kysely<Database>, appId: string, settings: BucketSettings): Promise<number> {
  // The unique index decides between simultaneous creators; no check beforehand.
  const row = await db
    .insertInto('buckets')
    .values({ name: settings.name, open_to_read: settings.openToRead, open_to_upload: settings.openToUpload, app_id: appId })
    .returning('bucket_id')
    .executeTakeFirstOrThrow()
    .catch((error: unknown) => {
      // The app was deleted after its token was checked: the token is revoked now.
      if (isDatabaseError(error, 'foreign-key-violation')) throw refused.invalidToken();
      return refuseNameClash(error);
    });
  return row.bucket_id;
}

/** Says why a change scoped to the caller's app matched no bucket: another app's, or none at all. */
async function refuseBucket(db: Kysely<Database>, bucketId: number): Promise<never> {
  const exists = await db.selectFrom('buckets').select('bucket_id').where('bucket_id', '=', bucketId).executeTakeFirst();
  throw exists ? refused.notYourBucket() : refused.unknownBucket();
}

export async function editBucket(db: Kysely<Database>, appId: string, bucketId: number, settings: BucketSettings): Promise<void> {
  // Owner and bucket in the WHERE clause: another app's request changes nothing, even for a moment.
  const updated = await db
    .updateTable('buckets')
    .set({ name: settings.name, open_to_read: settings.openToRead, open_to_upload: settings.openToUpload })
    .where('bucket_id', '=', bucketId)
    .where('app_id', '=', appId)
    .returning('bucket_id')
    .executeTakeFirst()
    .catch(refuseNameClash);
  if (!updated) await refuseBucket(db, bucketId);
}

export async function viewBucket(db: Kysely<Database>, bucketId: number): Promise<Bucket> {
  const row = await selectBuckets(db).where('b.bucket_id', '=', bucketId).executeTakeFirst();
  if (!row) throw refused.unknownBucket();
  return bucketOf(row, row.file_count);
}

export async function listBuckets(db: Kysely<Database>, appId: string): Promise<Bucket[]> {
  const rows = await selectBuckets(db).where('b.app_id', '=', appId).orderBy('b.bucket_id').execute();
  return rows.map((row) => bucketOf(row, row.file_count));
}

/**
 * Removes the bucket with its files, its incomplete uploads and their bytes: the files in batches
 * first (see purgeBucketFiles), then, in one short transaction, the bucket with whatever was
 * uploaded into it meanwhile. Its files are all gone by the time the deletion is answered.
 */
export async function deleteBucket(ctx: ServiceContext, appId: string, bucketId: number): Promise<void> {
  const owner = await ctx.db.selectFrom('buckets').select('app_id').where('bucket_id', '=', bucketId).executeTakeFirst();
  if (!owner) throw refused.unknownBucket();
  if (owner.app_id !== appId) throw refused.notYourBucket();
  await purgeBucketFiles(ctx, bucketId);
  const { storageKeys, uploadIds } = await ctx.db.transaction().execute(async (trx) => {
    // Locking the bucket first makes a concurrent upload into it (or resumable creation) wait and
    // then fail on the foreign key, so every row that gets deleted is seen here and its bytes are
    // removed below.
    const bucket = await trx.selectFrom('buckets').select('app_id').where('bucket_id', '=', bucketId).forUpdate().executeTakeFirst();
    // Another deletion of the same bucket finished first.
    if (!bucket) throw refused.unknownBucket();
    const files = await trx.deleteFrom('files').where('bucket_id', '=', bucketId).returning('storage_key').execute();
    const uploadIds = await takeResumablesOf(trx, { bucketIds: [bucketId] });
    await trx.deleteFrom('buckets').where('bucket_id', '=', bucketId).execute();
    return { storageKeys: files.map((file) => file.storage_key), uploadIds };
  });
  await dropBytes(ctx, storageKeys);
  await dropResumableBytes(ctx, uploadIds);
}
