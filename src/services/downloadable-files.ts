import { sql, type Kysely } from 'kysely';
import { compiledOnce } from '../../db/compiled-once.js';
import type { Database } from '../../db/schema.js';
import { MAX_BUCKET_NAME_LENGTH } from './buckets.js';
import { isLive } from './files.js';
import { MAX_FILE_NAME_BYTES } from './file-names.js';

/** What serving a file needs: its key for the counter, its bytes, its name for the headers, and what validators come from. */
export interface Downloadable {
  fileKey: number;
  /** The app that owns the file's bucket: its heavy work (renders) is admitted as that app's. */
  appId: string;
  storageKey: string;
  fileName: string;
  size: number;
  sha256: string;
  uploadTime: Date;
}

/** The columns of a Downloadable, for every query that finds one. */
export const DOWNLOADABLE = [
  'files.file_key as fileKey',
  'files.storage_key as storageKey',
  'files.real_file_name as fileName',
  'files.size_bytes as size',
  'files.sha256 as sha256',
  'files.upload_time as uploadTime',
] as const;

function liveReadableFiles(db: Kysely<Database>) {
  return db
    .selectFrom('files')
    .innerJoin('buckets', 'buckets.bucket_id', 'files.bucket_id')
    .select(DOWNLOADABLE)
    .select('buckets.app_id as appId')
    .where(isLive())
    .where('buckets.open_to_read', '=', true);
}

const publicFileByPath = compiledOnce((db, bucketName: string, fileName: string) =>
  liveReadableFiles(db).where(sql`lower(buckets.name)`, '=', sql`lower(${bucketName})`).where('files.real_file_name', '=', fileName),
);

/**
 * The live file at `/<bucketName>/<fileName>` of an OpenToRead bucket, in one query through the
 * unique indexes on lower(buckets.name) and (bucket_id, real_file_name). The bucket name matches
 * in any case, as the router does; the file name exactly. Names that no row can hold (too long, or
 * with a NUL, which PostgreSQL text refuses) are answered without asking the database.
 */
export async function findPublicFileByPath(db: Kysely<Database>, bucketName: string, fileName: string): Promise<Downloadable | undefined> {
  if (bucketName.length > MAX_BUCKET_NAME_LENGTH || Buffer.byteLength(fileName, 'utf8') > MAX_FILE_NAME_BYTES) return undefined;
  if (bucketName.includes('\0') || fileName.includes('\0')) return undefined;
  const [file] = await publicFileByPath(db, bucketName, fileName);
  return file;
}

const publicFileByKey = compiledOnce((db, fileKey: number) => liveReadableFiles(db).where('files.file_key', '=', fileKey));

/** The live file with this key, when its bucket is OpenToRead. */
export async function findPublicFileByKey(db: Kysely<Database>, fileKey: number): Promise<Downloadable | undefined> {
  const [file] = await publicFileByKey(db, fileKey);
  return file;
}
