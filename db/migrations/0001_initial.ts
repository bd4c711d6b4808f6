import { sql, type Kysely } from 'kysely';

// Migrations take Kysely<any>: they describe the schema as it was then, not as db/schema.ts says now.
/* eslint-disable @typescript-eslint/no-explicit-any */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('apps')
    .addColumn('app_id', 'text', (c) => c.primaryKey())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('access_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull().references('apps.app_id').onDelete('cascade'))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('access_tokens_app_id').on('access_tokens').column('app_id').execute();
  await db.schema.createIndex('access_tokens_expires_at').on('access_tokens').column('expires_at').execute();

  await db.schema
    .createTable('buckets')
    .addColumn('bucket_id', 'bigserial', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('open_to_read', 'boolean', (c) => c.notNull())
    .addColumn('open_to_upload', 'boolean', (c) => c.notNull())
    .addColumn('app_id', 'text', (c) => c.notNull().references('apps.app_id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  // Names are unique across all apps, case-insensitively: the constraint decides races.
  await sql`CREATE UNIQUE INDEX buckets_name_lower ON buckets (lower(name))`.execute(db);
  await db.schema.createIndex('buckets_app_id').on('buckets').column('app_id').execute();

  await db.schema
    .createTable('files')
    .addColumn('file_key', 'bigserial', (c) => c.primaryKey())
    .addColumn('bucket_id', 'bigint', (c) => c.notNull().references('buckets.bucket_id').onDelete('cascade'))
    .addColumn('real_file_name', 'text', (c) => c.notNull())
    .addColumn('file_extension', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    // Not in any index, so counter flushes stay heap-only (HOT) updates.
    .addColumn('download_times', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('upload_time', 'timestamptz', (c) => c.notNull())
    .addColumn('alive_days', 'integer', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('storage_key', 'text', (c) => c.notNull().unique())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .execute();
  // One row per name and bucket; an expired holder of the name is removed by the upload that reuses it.
  await db.schema
    .createIndex('files_bucket_name')
    .on('files')
    .columns(['bucket_id', 'real_file_name'])
    .unique()
    .execute();
  await db.schema.createIndex('files_expires_at').on('files').column('expires_at').execute();

  await db.schema
    .createTable('download_secrets')
    .addColumn('secret_hash', 'text', (c) => c.primaryKey())
    .addColumn('file_key', 'bigint', (c) => c.notNull().references('files.file_key').onDelete('cascade'))
    .addColumn('app_id', 'text', (c) => c.notNull().references('apps.app_id').onDelete('cascade'))
    .addColumn('uses_left', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('download_secrets_file_key').on('download_secrets').column('file_key').execute();
  await db.schema.createIndex('download_secrets_app_id').on('download_secrets').column('app_id').execute();

  await db.schema
    .createTable('service_state')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['download_secrets', 'files', 'buckets', 'access_tokens', 'apps', 'service_state']) {
    await db.schema.dropTable(table).execute();
  }
}
