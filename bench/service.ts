/**
 * The service under test: `node dist/src/server.js` as a child process, configured for the bench,
 * with an app, an AccessToken and an OpenToRead bucket to work in. And the fresh PostgreSQL
 * database a --postgres run uses.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { callJson, GiB } from './load.js';
import { freePort, SERVER_ENTRY, SERVER_NODE_FLAGS, SERVER_START_ENV, startChild, waitForHttp, type Child } from './processes.js';

export type DatabaseKind = 'embedded' | 'postgres';

export interface ServiceInstance {
  db: DatabaseKind;
  child: Child;
  origin: string;
  token: string;
  bucketId: number;
  bucketName: string;
}

export interface ServiceSetup {
  db: DatabaseKind;
  /** For postgres: the URL of the bench's own database. */
  databaseUrl?: string;
  dataDir: string;
  appId: string;
  appSecret: string;
  /** Directory for `node --cpu-prof` output; unset → no profiling. */
  cpuProfDir?: string;
  /** Further settings, such as STORAGE_BACKEND=s3 and its S3_* variables. */
  extraEnv?: Record<string, string>;
}

function serviceEnv(setup: ServiceSetup, port: number): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '',
    ...SERVER_START_ENV,
    NODE_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: setup.dataDir,
    STORAGE_DIR: path.join(setup.dataDir, 'files'),
    ...(setup.databaseUrl ? { DATABASE_URL: setup.databaseUrl } : {}),
    BOOTSTRAP_APPS: `${setup.appId}:${setup.appSecret}`,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '0',
    TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
    MAX_UPLOAD_BYTES: String(4 * GiB),
    ...setup.extraEnv,
  };
}

/** Starts the service and waits until /ready answers 200. */
export async function startService(setup: ServiceSetup): Promise<{ child: Child; origin: string }> {
  await mkdir(setup.dataDir, { recursive: true });
  const port = await freePort();
  const args = [
    ...SERVER_NODE_FLAGS,
    // Node's default names: a fixed --cpu-prof-name would let the hashing threads overwrite the main thread's profile.
    ...(setup.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${path.join(setup.cpuProfDir, `service-${setup.db}`)}`] : []),
    SERVER_ENTRY,
  ];
  const child = startChild(`service (${setup.db})`, process.execPath, args, serviceEnv(setup, port));
  const origin = `http://127.0.0.1:${port}`;
  await waitForHttp(`${origin}/ready`, child);
  return { child, origin };
}

/** A token for the bench's app and, unless given, a fresh OpenToRead bucket. */
export async function prepareService(
  setup: ServiceSetup,
  started: { child: Child; origin: string },
  bucket?: { bucketId: number; bucketName: string },
): Promise<ServiceInstance> {
  const { origin } = started;
  const token = await callJson(origin, '/API/AccessToken', { AppId: setup.appId, AppSecret: setup.appSecret });
  if (token.json.Code !== 0) throw new Error(`AccessToken failed: ${JSON.stringify(token.json)}`);
  const accessToken = String(token.json.AccessToken);
  if (!bucket) {
    const bucketName = `bench-${randomBytes(4).toString('hex')}`;
    const created = await callJson(origin, '/API/CreateBucket', {
      AccessToken: accessToken,
      BucketName: bucketName,
      OpenToRead: true,
      OpenToUpload: false,
    });
    if (created.json.Code !== 0) throw new Error(`CreateBucket failed: ${JSON.stringify(created.json)}`);
    bucket = { bucketId: Number(created.json.BucketId), bucketName };
  }
  return { db: setup.db, child: started.child, origin, token: accessToken, bucketId: bucket.bucketId, bucketName: bucket.bucketName };
}

function readComm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

interface BenchDatabase {
  url: string;
  name: string;
  /**
   * Pids of the server processes connected to this database (the service's pool), to measure
   * their CPU: on a small machine the database server competes with the service for the cores.
   * Empty when the server runs elsewhere.
   */
  backendPids(): Promise<number[]>;
  /** Server version and the settings that weigh on commits. */
  describe(): Promise<string>;
  drop(): Promise<void>;
}

/** A fresh database `bench_<random>` on the server at `serverUrl`; drop() removes it. */
export async function createBenchDatabase(serverUrl: string): Promise<BenchDatabase> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  await admin.connect();
  admin.on('error', () => {});
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    name,
    backendPids: async () => {
      const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name]);
      // Only when the server runs on this machine: a pid of another machine's server could name any process here.
      return rows.map((row) => Number(row.pid)).filter((pid) => /^postgres/.test(readComm(pid)));
    },
    describe: async () => {
      const { rows } = await admin.query<{ version: string; sync: string; fsync: string; buffers: string }>(
        "SELECT current_setting('server_version') AS version, current_setting('synchronous_commit') AS sync, " +
          "current_setting('fsync') AS fsync, current_setting('shared_buffers') AS buffers",
      );
      const row = rows[0]!;
      return `PostgreSQL ${row.version} (synchronous_commit ${row.sync}, fsync ${row.fsync}, shared_buffers ${row.buffers})`;
    },
    drop: async () => {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await admin.end().catch(() => {});
      }
    },
  };
}

/** The server's address with any password hidden, for printing. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.href;
  } catch {
    return '(unparsable URL)';
  }
}
