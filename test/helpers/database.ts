import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { connectDatabase, type DatabaseHandle } from '../../db/connect.js';

/**
 * The database a test file runs against: PostgreSQL when DATABASE_URL is set (a fresh database per
 * file, dropped afterwards, so files run in parallel), else an in-memory embedded PostgreSQL.
 */
export const serverUrl = process.env.DATABASE_URL || undefined;
export const databaseKind = serverUrl ? 'postgres' : 'embedded';

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  handle: DatabaseHandle;
  /** For PostgreSQL: a URL other processes or pools can use to reach the same database. */
  url: string | undefined;
  /** Opens a second, independent connection pool to the same database (another "instance"). */
  openAnother(): Promise<DatabaseHandle>;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  if (!serverUrl) {
    const handle = await connectDatabase({ databaseUrl: undefined, dataDir: '', inMemory: true });
    return {
      handle,
      url: undefined,
      // The embedded database has one connection in one process: instances share the handle.
      openAnother: async () => handle,
      drop: () => handle.close(),
    };
  }
  const name = `test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const others: DatabaseHandle[] = [];
  const handle = await connectDatabase({ databaseUrl: url.href, dataDir: '', poolSize: 10 });
  return {
    handle,
    url: url.href,
    openAnother: async () => {
      const another = await connectDatabase({ databaseUrl: url.href, dataDir: '', poolSize: 10 });
      others.push(another);
      return another;
    },
    drop: async () => {
      for (const other of others) await other.close();
      await handle.close();
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
