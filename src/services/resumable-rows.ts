import type { Kysely } from 'kysely';
import type { Database, ResumableUploadRow } from '../../db/schema.js';

/** Every column of the row, by name: a prepared statement keeps its result when a migration adds a column. */
export const RESUMABLE_UPLOAD_COLUMNS = [
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

/** The upload, expired or not; undefined once it is gone, or being turned into a file. */
export async function findResumable(db: Kysely<Database>, uploadId: string): Promise<ResumableUploadRow | undefined> {
  return db.selectFrom('resumable_uploads').select(RESUMABLE_UPLOAD_COLUMNS).where('upload_id', '=', uploadId).where('completing_since', 'is', null).executeTakeFirst();
}
