import { sql, type Kysely } from 'kysely';

/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * Image variants kept in the storage backend: which exist, of which file's bytes, how large, and
 * when each was last served (the least recently used go first past IMAGE_CACHE_BYTES). No foreign
 * key to files: a file's rows go first and its bytes after (dropBytes), and the variants' keys
 * must still be found by the file's storage key then; a variant left without its file is removed
 * by the orphan sweep.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('image_variants')
    .addColumn('variant_key', 'text', (c) => c.primaryKey())
    .addColumn('source_key', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('image_variants_source_key').on('image_variants').column('source_key').execute();
  await db.schema.createIndex('image_variants_last_used_at').on('image_variants').column('last_used_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('image_variants').execute();
}
