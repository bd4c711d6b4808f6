import { existsSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { migrateToLatest } from './migrate.js';
import type { Database } from './schema.js';
import type { EmbeddedServerLog } from './embedded-ownership.js';

/** Where releases before the embedded PostgreSQL server kept their database (PGlite, in-process). */
export const PGLITE_FOLDER = 'pgdata';
/** The PGlite folder once its rows are in the server; kept, not deleted, until its owner removes it. */
export const IMPORTED_PGLITE_FOLDER = 'pgdata.imported';
/** Written in the same transaction as the rows, so an import is never applied twice. */
const IMPORT_MARK = 'imported_from_pglite';

const INT8_OID = 20;
const BATCH_ROWS = 500;

/**
 * A DATA_DIR written by an earlier release holds its database in DATA_DIR/pgdata (PGlite). On the
 * first start with the embedded server, every row moves into the server in one transaction, the
 * sequences continue after the highest ids, and the folder is renamed to pgdata.imported.
 */
export async function importPgliteData(dataDir: string, db: Kysely<Database>, log: EmbeddedServerLog): Promise<void> {
  const source = path.join(dataDir, PGLITE_FOLDER);
  if (!existsSync(path.join(source, 'PG_VERSION'))) return;
  await migrateToLatest(db as Kysely<unknown>);
  const done = await db.selectFrom('service_state').select('value').where('key', '=', IMPORT_MARK).executeTakeFirst();
  if (!done) {
    log.info(`moving the rows of the earlier database in ${source} into the embedded PostgreSQL server`);
    const { PGlite } = await import('@electric-sql/pglite');
    const pglite = await PGlite.create({ dataDir: source, parsers: { [INT8_OID]: (value: string) => Number(value) } });
    try {
      const tables = await pglite.query<{ name: string }>(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name NOT LIKE 'kysely_migration%'",
      );
      await db.transaction().execute(async (trx) => {
        // Rows arrive in any table order: foreign keys are checked by the rows' own consistency in the source.
        await sql`SET LOCAL session_replication_role = replica`.execute(trx);
        for (const { name } of tables.rows) {
          const { rows } = await pglite.query<Record<string, unknown>>(`SELECT * FROM "${name.replaceAll('"', '""')}"`);
          for (let i = 0; i < rows.length; i += BATCH_ROWS) {
            await trx.insertInto(name as never).values(rows.slice(i, i + BATCH_ROWS) as never).execute();
          }
          log.info(`  ${name}: ${rows.length} rows`);
        }
        // Serial ids continue after the highest imported one.
        const serials = await sql<{ table_name: string; column_name: string }>`
          SELECT table_name, column_name FROM information_schema.columns
          WHERE table_schema = 'public' AND column_default LIKE 'nextval(%'`.execute(trx);
        for (const { table_name: table, column_name: column } of serials.rows) {
          await sql`SELECT setval(pg_get_serial_sequence(${table}, ${column}), GREATEST((SELECT max(${sql.ref(column)}) FROM ${sql.table(table)}), 1), (SELECT count(*) > 0 FROM ${sql.table(table)}))`.execute(trx);
        }
        await trx.insertInto('service_state').values({ key: IMPORT_MARK, value: new Date().toISOString() }).execute();
      });
    } finally {
      await pglite.close();
    }
  }
  await rename(source, path.join(dataDir, IMPORTED_PGLITE_FOLDER));
  log.info(`the earlier database folder is kept as ${path.join(dataDir, IMPORTED_PGLITE_FOLDER)}; remove it once you no longer need it`);
}
