import type { Kysely } from 'kysely';

/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * When the request that delivered an upload's last byte began turning it into a file. The row stays
 * until the file's row is committed, so the orphan sweeps, which judge bytes by the rows that name
 * them, leave the upload's bytes alone meanwhile; to clients the upload is already gone.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('resumable_uploads').addColumn('completing_since', 'timestamptz').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('resumable_uploads').dropColumn('completing_since').execute();
}
