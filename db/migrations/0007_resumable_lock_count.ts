import type { Kysely } from 'kysely';

/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * How many times a request has taken an upload's lock. An instance that finds the count one more
 * than at its own last append knows that no other request has written the upload's bytes since, so
 * it may trust what it saw of them (on S3, the parts it listed and sent) instead of listing them again.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('resumable_uploads').addColumn('lock_count', 'integer', (col) => col.notNull().defaultTo(0)).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('resumable_uploads').dropColumn('lock_count').execute();
}
