import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import tap, { type Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createApp, type AppCredentials } from '../../src/services/apps.js';
import type { ServiceContext } from '../../src/services/context.js';
import { prepareDatabase } from '../../src/services/startup.js';
import { DiskStore } from '../../src/storage/disk/store.js';
import { CachedSmallReads } from '../../src/storage/small-read-cache.js';
import type { DatabaseHandle } from '../../db/connect.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { newBucketName, removeTestBucket, s3ServiceEnv, whyNoS3 } from './s3.js';

export interface TestService {
  app: FastifyInstance;
  config: Config;
  /** Every log line the service wrote, parsed. */
  logs: string[];
  /** Creates an app directly and returns its credentials and a fresh AccessToken. */
  newApp(): Promise<AppCredentials & { token: string }>;
  token(appId: string, appSecret: string): Promise<string>;
  /** Listens on a free loopback port, for tests that need a real socket; returns the base URL. */
  listen(): Promise<string>;
  /** What the services work with, as a request of this instance would give them. */
  context(): ServiceContext;
}

/** The disk store under the service's small-read cache, for tests that look at its folders. */
export function diskStoreOf(service: TestService): DiskStore {
  const { storage } = service.app;
  const store = storage instanceof CachedSmallReads ? storage.store : storage;
  if (!(store instanceof DiskStore)) throw new Error(`not a disk store: ${store.description}`);
  return store;
}

/** A form post, as the original clients send it. */
export function postForm(app: FastifyInstance, url: string, fields: Record<string, string | number | boolean>) {
  const payload = new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return app.inject({
    method: 'POST',
    url,
    payload,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
}

/** One database per test file (the embedded one takes seconds to start); services are cheap. */
let shared: Promise<TestDatabase> | undefined;

export function testDatabase(): Promise<TestDatabase> {
  if (!shared) {
    shared = createTestDatabase().then(async (database) => {
      // Dropped when the whole file is done, not when the first test that asked for it ends.
      tap.teardown(() => database.drop());
      const { migrateToLatest } = await import('../../db/migrate.js');
      await migrateToLatest(database.handle.db as never);
      return database;
    });
  }
  return shared;
}

class LineCollector extends Writable {
  constructor(private readonly lines: string[]) {
    super();
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void) {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
}

export interface ServiceOptions {
  env?: Record<string, string>;
  /** Another connection pool to the same database, as a second instance would have. */
  database?: DatabaseHandle;
  /** The built web console to serve (see test/helpers/browser.ts). */
  consoleDir?: string;
}

/**
 * `TEST_STORAGE_BACKEND=s3` runs the services the tests build on the S3 test server (S3_TEST_*), each
 * with a bucket of its own, so the same tests check both stores. Unset or `disk`: the disk store.
 */
export const testStorageBackend: 'disk' | 's3' = process.env.TEST_STORAGE_BACKEND === 's3' ? 's3' : 'disk';
if (testStorageBackend === 's3' && whyNoS3()) throw new Error(`TEST_STORAGE_BACKEND=s3, but ${whyNoS3()}`);

/** For tests that look at the disk store's folders themselves: a value for tap's `skip`. */
export const onlyOnDisk = (why: string): string | false => (testStorageBackend === 's3' ? `on the disk store only: ${why}` : false);

/**
 * The bucket of each storage folder in S3 mode: a second instance given the first one's STORAGE_DIR
 * shares its store, so it gets its bucket. The last service using a bucket deletes it.
 */
const bucketsByStorageDir = new Map<string, { bucket: string; users: number }>();

function storageEnv(dataDir: string, env: Record<string, string> = {}): { env: Record<string, string>; release(): Promise<void> } {
  if (testStorageBackend !== 's3' || env.STORAGE_BACKEND) return { env, release: async () => {} };
  const storageDir = path.resolve(env.STORAGE_DIR ?? path.join(dataDir, 'files'));
  const shared = bucketsByStorageDir.get(storageDir) ?? { bucket: newBucketName(), users: 0 };
  shared.users += 1;
  bucketsByStorageDir.set(storageDir, shared);
  return {
    // The smallest part S3 allows, so that a test upload of a few MiB already goes in parts.
    env: { ...s3ServiceEnv(shared.bucket, { S3_PART_SIZE_BYTES: String(5 * 1024 * 1024) }), ...env },
    release: async () => {
      shared.users -= 1;
      if (shared.users > 0) return;
      bucketsByStorageDir.delete(storageDir);
      await removeTestBucket(shared.bucket);
    },
  };
}

/** Builds the service against the file's database, with its own data folder and captured logs. */
export async function startService(t: Test, options: ServiceOptions = {}): Promise<TestService> {
  const database = options.database ?? (await testDatabase()).handle;
  const dataDir = await mkdtemp(path.join(tmpdir(), 'filestore-test-'));
  const storage = storageEnv(dataDir, options.env);
  // Load shedding by event loop delay is off unless a test turns it on: on a busy machine it would
  // turn ordinary answers into 503s.
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'info', ADMIN_KEY: '', MAX_EVENT_LOOP_DELAY_MS: '0', ...storage.env });
  await prepareDatabase(database.db, config);
  const logs: string[] = [];
  const app = await buildApp({ config, database, logStream: new LineCollector(logs), consoleDir: options.consoleDir }).catch(async (error: unknown) => {
    await storage.release();
    throw error;
  });
  t.teardown(async () => {
    await app.close();
    await storage.release();
    await rm(dataDir, { recursive: true, force: true });
  });

  const token = async (appId: string, appSecret: string) => {
    const response = await postForm(app, '/API/AccessToken', { AppId: appId, AppSecret: appSecret });
    const body = response.json();
    if (body.Code !== 0) throw new Error(`no token: ${response.body}`);
    return body.AccessToken as string;
  };

  return {
    app,
    config,
    logs,
    token,
    listen: () => app.listen({ port: 0, host: '127.0.0.1' }),
    context: () => ({ db: app.db, storage: app.storage, resumable: app.resumable.resumable, log: app.log }),
    newApp: async () => {
      const credentials = await createApp(database.db);
      return { ...credentials, token: await token(credentials.appId, credentials.appSecret) };
    },
  };
}
