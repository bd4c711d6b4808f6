import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import tap from 'tap';
import { embeddedTarget, handleFor, type DatabaseHandle, type PoolTarget } from '../../db/connect.js';
import { createEmbeddedCluster, startEmbeddedServer, type EmbeddedServer } from '../../db/embedded-server.js';

const run = promisify(execFile);

/**
 * The database a test file runs against: a fresh database per file (dropped afterwards, so files
 * run in parallel) on PostgreSQL at DATABASE_URL when set, else on an embedded server of the file's
 * own, started from a copy of one cluster made once per machine (so no test pays for initdb).
 */
export const serverUrl = process.env.DATABASE_URL || undefined;
export const databaseKind = serverUrl ? 'postgres' : 'embedded';

/** Made once and never started; every embedded server of the tests begins as a copy of it. */
const TEMPLATE_CLUSTER = path.join(tmpdir(), `filestore-test-cluster-${process.getuid?.() ?? 'user'}-pg18`);

async function templateCluster(): Promise<string> {
  if (!existsSync(path.join(TEMPLATE_CLUSTER, 'PG_VERSION'))) {
    // Files starting together may each build one; the first rename wins, the others are dropped.
    const building = await mkdtemp(`${TEMPLATE_CLUSTER}-`);
    // As root the server runs as an unprivileged user, who must pass through this folder.
    await chmod(building, 0o755);
    await createEmbeddedCluster(path.join(building, 'cluster'));
    await run('mv', ['-T', path.join(building, 'cluster'), TEMPLATE_CLUSTER]).catch(() => {});
    await rm(building, { recursive: true, force: true });
  }
  return TEMPLATE_CLUSTER;
}

/** Puts a copy of the template cluster at DATA_DIR/postgres, as a service's first start would have made it. */
export async function seedEmbeddedCluster(dataDir: string): Promise<void> {
  // cp -a keeps the owner (as root, the unprivileged user the server runs as).
  await run('cp', ['-a', await templateCluster(), path.join(dataDir, 'postgres')]);
}

let fileServer: Promise<EmbeddedServer> | undefined;

/** The embedded server of this test file, stopped when the file ends. */
function embeddedServer(): Promise<EmbeddedServer> {
  fileServer ??= (async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'filestore-test-db-'));
    await seedEmbeddedCluster(dataDir);
    const server = await startEmbeddedServer({ dataDir, log: { info: () => {} } });
    tap.teardown(async () => {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    });
    return server;
  })();
  return fileServer;
}

async function adminQuery(target: PoolTarget, sql: string): Promise<void> {
  const client = new pg.Client(target);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  handle: DatabaseHandle;
  /** For PostgreSQL: a URL other processes can use to reach the same database. */
  url: string | undefined;
  /** Opens a second, independent connection pool to the same database (another "instance"). */
  openAnother(): Promise<DatabaseHandle>;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `test_${process.pid}_${randomBytes(4).toString('hex')}`;
  let admin: PoolTarget;
  let target: PoolTarget;
  let url: string | undefined;
  if (serverUrl) {
    admin = { connectionString: serverUrl };
    const address = new URL(serverUrl);
    address.pathname = `/${name}`;
    url = address.href;
    target = { connectionString: url };
  } else {
    const server = await embeddedServer();
    admin = embeddedTarget(server);
    target = embeddedTarget(server, name);
  }
  await adminQuery(admin, `CREATE DATABASE ${name}`);
  const open = (): DatabaseHandle => handleFor(target, databaseKind, 10);
  const others: DatabaseHandle[] = [];
  const handle = open();
  return {
    handle,
    url,
    openAnother: async () => {
      const another = open();
      others.push(another);
      return another;
    },
    drop: async () => {
      for (const other of others) await other.close();
      await handle.close();
      await adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
