import { sql, type Kysely } from 'kysely';

/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * Incomplete resumable (tus) uploads. Their state lives here, not in one instance's memory, so any
 * instance serves any request of any upload; their bytes live in the storage backend.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('resumable_uploads')
    // 128 random bits, hex: the capability for the upload's URL.
    .addColumn('upload_id', 'text', (c) => c.primaryKey())
    // No foreign keys: an upload whose app or bucket went away is refused at completion and swept at expiry.
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('bucket_id', 'bigint', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('alive_days', 'integer', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    // Bytes acknowledged to the client: durable in the store before this is written.
    .addColumn('offset_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    // The client's Upload-Metadata (AccessToken removed), echoed by HEAD.
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    // Pushed forward by every PATCH.
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    // A lease, not a held connection: a PATCH streams for minutes, and an instance that dies mid-PATCH
    // must not keep the upload locked for longer than the lease.
    .addColumn('lock_token', 'text')
    .addColumn('locked_until', 'timestamptz')
    .execute();
  await db.schema.createIndex('resumable_uploads_expires_at').on('resumable_uploads').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('resumable_uploads').execute();
}
