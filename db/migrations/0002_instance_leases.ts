import { sql, type Kysely } from 'kysely';

/* eslint-disable @typescript-eslint/no-explicit-any */
/** One row per running instance, renewed by its heartbeat; a lapsed row marks an instance that died. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('instance_leases')
    .addColumn('instance_id', 'text', (c) => c.primaryKey())
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('heartbeat_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

