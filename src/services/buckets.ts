import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { BucketRow, Database } from '../../db/schema.js';
import { failure, INVALID_TOKEN_MESSAGE } from '../errors.js';
import type { RemoveBlobs } from '../storage/blob-store.js';

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
  'favicon.ico',
  'robots.txt',
];

const RESERVED = new Set(RESERVED_BUCKET_NAMES.map((name) => name.toLowerCase()));
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export const NAME_TAKEN_MESSAGE = 'There is one bucket already called that name!';
export const UNKNOWN_BUCKET_MESSAGE = 'Could not find that bucket.';
export const NOT_YOUR_BUCKET_MESSAGE = 'This is not your bucket!';

/** The rule for BucketName and NewBucketName, as a `check` for the validation layer. */
export function bucketNameProblem(value: string, name: string): string | undefined {
  if (value.length < 5 || value.length > 25) return `The field ${name} must be 5 to 25 characters long.`;
  if (!NAME_PATTERN.test(value)) {
    return `The field ${name} may contain only letters, digits, '.', '_' and '-', and must start with a letter or digit.`;
  }
  if (RESERVED.has(value.toLowerCase())) return `The ${name} '${value}' is reserved.`;
  return undefined;
}

export interface Bucket {
  BucketId: number;
  BucketName: string;
  OpenToRead: boolean;
  OpenToUpload: boolean;
  BelongingAppId: string;
  FileCount: number;
}

type BucketColumns = Pick<BucketRow, 'bucket_id' | 'name' | 'open_to_read' | 'open_to_upload' | 'app_id'>;

/** The Bucket object of the protocol. `count(*)` is text on pg and a number on PGlite. */
export function bucketView(row: BucketColumns, fileCount: number | string | bigint | null): Bucket {
  return {
    BucketId: row.bucket_id,
    BucketName: row.name,
    OpenToRead: row.open_to_read,
    OpenToUpload: row.open_to_upload,
    BelongingAppId: row.app_id,
    FileCount: Number(fileCount ?? 0),
  };
}

export interface BucketSettings {
  name: string;
  openToRead: boolean;
  openToUpload: boolean;
}


/** Turns a violation of the unique index on lower(name) into the protocol's refusal. */
function refuseNameClash(error: unknown): never {
  const e = error as { code?: unknown; constraint?: unknown } | null;
  if (e?.code === '23505' && e.constraint === 'buckets_name_lower') throw failure(NAME_TAKEN_MESSAGE);
  throw error;
}

/** Expired files count as gone everywhere, so only live ones are counted. */
function liveFileCount(eb: ExpressionBuilder<Database & { b: Database['buckets'] }, 'b'>) {
  return eb
    .selectFrom('files as f')
    .select((inner) => inner.fn.countAll().as('n'))
    .whereRef('f.bucket_id', '=', 'b.bucket_id')
    .where('f.expires_at', '>', sql<Date>`now()`)
    .as('file_count');
}

function selectBuckets(db: Kysely<Database>) {
  return db
    .selectFrom('buckets as b')
    .select(['b.bucket_id', 'b.name', 'b.open_to_read', 'b.open_to_upload', 'b.app_id'])
    .select(liveFileCount);
}

export async function createBucket(db: Kysely<Database>, appId: string, settings: BucketSettings): Promise<number> {
  // The unique index on lower(name) decides between simultaneous creators; no check beforehand.
  const row = await db
    .insertInto('buckets')
    .values({ name: settings.name, open_to_read: settings.openToRead, open_to_upload: settings.openToUpload, app_id: appId })
    .returning('bucket_id')
    .executeTakeFirstOrThrow()
    .catch((error: unknown) => {
      // The app was deleted after its token was checked: the token is revoked now.
      if ((error as { code?: unknown }).code === '23503') throw failure(INVALID_TOKEN_MESSAGE);
      return refuseNameClash(error);
    });
  return row.bucket_id;
}

/** Says why a change scoped to the caller's app matched no bucket: another app's, or none at all. */
async function refuseBucket(db: Kysely<Database>, bucketId: number): Promise<never> {
  const exists = await db.selectFrom('buckets').select('bucket_id').where('bucket_id', '=', bucketId).executeTakeFirst();
  throw failure(exists ? NOT_YOUR_BUCKET_MESSAGE : UNKNOWN_BUCKET_MESSAGE);
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
  if (!row) throw failure(UNKNOWN_BUCKET_MESSAGE);
  return bucketView(row, row.file_count);
}

export async function listBuckets(db: Kysely<Database>, appId: string): Promise<Bucket[]> {
  const rows = await selectBuckets(db).where('b.app_id', '=', appId).orderBy('b.bucket_id').execute();
  return rows.map((row) => bucketView(row, row.file_count));
}

export async function deleteBucket(db: Kysely<Database>, appId: string, bucketId: number, removeBlobs: RemoveBlobs): Promise<void> {
  const storageKeys = await db.transaction().execute(async (trx) => {
    // Locking the bucket first makes a concurrent upload into it wait and then fail on the foreign
    // key, so every file row that gets deleted is seen here and its bytes are removed below.
    const bucket = await trx.selectFrom('buckets').select('app_id').where('bucket_id', '=', bucketId).forUpdate().executeTakeFirst();
    if (!bucket) throw failure(UNKNOWN_BUCKET_MESSAGE);
    if (bucket.app_id !== appId) throw failure(NOT_YOUR_BUCKET_MESSAGE);
    const files = await trx.deleteFrom('files').where('bucket_id', '=', bucketId).returning('storage_key').execute();
    await trx.deleteFrom('buckets').where('bucket_id', '=', bucketId).execute();
    return files.map((file) => file.storage_key);
  });
  await removeBlobs(storageKeys);
}
