import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { markDriverErrors } from './errors.js';
import { nameStatements } from './named-statements.js';
import { importPgliteData } from './pglite-import.js';
import type { Database } from './schema.js';
import type { EmbeddedServerLog } from './embedded-ownership.js';
import { startEmbeddedServer, type EmbeddedServer } from './embedded-server.js';

const INT8_OID = 20;
/** Identifiers, sizes and counters are bigint; all stay below 2^53, so they come back as numbers. */
const parseInt8 = (value: string): number => Number(value);
/** The same pool on an external server and on the embedded one. */
export const DEFAULT_POOL_SIZE = 20;

export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  /** 'postgres' for a server at DATABASE_URL, 'embedded' for the service's own server under DATA_DIR. */
  readonly kind: 'postgres' | 'embedded';
  /** Connections of the pool, for metrics. */
  poolStats(): { total: number; idle: number; waiting: number };
  /** Closes the pool, then stops the embedded server if this handle started it. */
  close(): Promise<void>;
}

export interface ConnectOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  poolSize?: number;
  /** Where the embedded server reports its start; silent when absent. */
  log?: EmbeddedServerLog;
}

/** Where a pool connects: a URL, or the socket of an embedded server. */
export type PoolTarget = { connectionString: string } | { host: string; port: number; user: string; database: string };

export function embeddedTarget(server: Pick<EmbeddedServer, 'socketDir' | 'port' | 'user' | 'database'>, database = server.database): PoolTarget {
  return { host: server.socketDir, port: server.port, user: server.user, database };
}

export function openPool(target: PoolTarget, poolSize = DEFAULT_POOL_SIZE): { db: Kysely<Database>; pool: pg.Pool } {
  const pool = new pg.Pool({
    ...target,
    max: poolSize,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client that loses its server emits here; without a listener the process would crash.
  pool.on('error', () => {});
  markDriverErrors(pool);
  nameStatements(pool);
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), pool };
}

/** A handle on a pool; `kind` says which server it reaches, `stopServer` runs after the pool closes. */
export function handleFor(target: PoolTarget, kind: DatabaseHandle['kind'], poolSize?: number, stopServer?: () => Promise<void>): DatabaseHandle {
  const { db, pool } = openPool(target, poolSize);
  return {
    db,
    kind,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: async () => {
      try {
        await db.destroy();
      } finally {
        await stopServer?.();
      }
    },
  };
}

export async function connectDatabase(options: ConnectOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl) return handleFor({ connectionString: options.databaseUrl }, 'postgres', options.poolSize);
  const log = options.log ?? { info: () => {} };
  const server = await startEmbeddedServer({ dataDir: options.dataDir, log });
  const handle = handleFor(embeddedTarget(server), 'embedded', options.poolSize, () => server.stop());
  try {
    await importPgliteData(options.dataDir, handle.db, log);
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}
