import { sql, type Kysely } from 'kysely';

/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * An incomplete upload belongs to its bucket and to the app that began it: deleting either deletes
 * its row (the service removes its bytes). With the foreign keys, a creation racing a deletion
 * waits for it and then fails, instead of leaving an upload into a bucket that is gone.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // Rows left by deletions of versions without the keys: their bytes are the orphan sweep's.
  await sql`DELETE FROM resumable_uploads r WHERE NOT EXISTS (SELECT 1 FROM buckets b WHERE b.bucket_id = r.bucket_id)
    OR NOT EXISTS (SELECT 1 FROM apps a WHERE a.app_id = r.app_id)`.execute(db);
  await db.schema
    .alterTable('resumable_uploads')
    .addForeignKeyConstraint('resumable_uploads_bucket_id_fkey', ['bucket_id'], 'buckets', ['bucket_id'], (c) => c.onDelete('cascade'))
    .execute();
  await db.schema
    .alterTable('resumable_uploads')
    .addForeignKeyConstraint('resumable_uploads_app_id_fkey', ['app_id'], 'apps', ['app_id'], (c) => c.onDelete('cascade'))
    .execute();
  await db.schema.createIndex('resumable_uploads_bucket_id').on('resumable_uploads').column('bucket_id').execute();
  await db.schema.createIndex('resumable_uploads_app_id').on('resumable_uploads').column('app_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('resumable_uploads_app_id').execute();
  await db.schema.dropIndex('resumable_uploads_bucket_id').execute();
  await db.schema.alterTable('resumable_uploads').dropConstraint('resumable_uploads_app_id_fkey').execute();
  await db.schema.alterTable('resumable_uploads').dropConstraint('resumable_uploads_bucket_id_fkey').execute();
}
