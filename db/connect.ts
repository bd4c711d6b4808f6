import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import type { Database } from './schema.js';

const INT8_OID = 20;
/** Identifiers, sizes and counters are bigint; all stay below 2^53, so both drivers return numbers. */
const parseInt8 = (value: string): number => Number(value);

export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  /** 'postgres' for a server reached through pg, 'embedded' for PGlite. */
  readonly kind: 'postgres' | 'embedded';
  /** Connections of the pg pool, for metrics; undefined for the embedded database's single connection. */
  poolStats(): { total: number; idle: number; waiting: number } | undefined;
  close(): Promise<void>;
}

export interface ConnectOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  /** For tests: keep the embedded database in memory instead of under dataDir. */
  inMemory?: boolean;
  poolSize?: number;
}

export async function connectDatabase(options: ConnectOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 20,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      types: {
        getTypeParser: ((oid: number, format?: string) =>
          oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
      },
    });
    // An idle client that loses its server emits here; without a listener the process would crash.
    pool.on('error', () => {});
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return {
      db,
      kind: 'postgres',
      poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      close: () => db.destroy(),
    };
  }

  let dataDir: string | undefined;
  if (!options.inMemory) {
    dataDir = path.join(options.dataDir, 'pgdata');
    await mkdir(dataDir, { recursive: true });
  }
  const client = await PGlite.create({ dataDir, parsers: { [INT8_OID]: parseInt8 } });
  const db = new Kysely<Database>({ dialect: new PGliteDialect(client) });
  return { db, kind: 'embedded', poolStats: () => undefined, close: () => db.destroy() };
}
