/**
 * Baseline: the database work of one upload, alone. POST /commit runs what the service does in
 * the database for each UploadFile, through the service's own functions (token lookup, bucket
 * authorization, the insert of commitUpload), with no multipart, no file and no fsync
 * of bytes: how many uploads per second the database lets through, the "commit floor".
 *
 * On PostgreSQL it shares the bench's database with the service (its own app and bucket); the
 * embedded server belongs to one service per DATA_DIR, so it gets its own in BENCH_DATA_DIR.
 *
 * Run as a child process by the bench: prints {"port":N} once it listens.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import { connectDatabase } from '../../db/connect.js';
import { migrateToLatest } from '../../db/migrate.js';
import { createApp } from '../../src/services/apps.js';
import { createBucket } from '../../src/services/buckets.js';
import { appForToken, issueToken } from '../../src/services/tokens.js';
import { authorizeUpload, commitUpload } from '../../src/services/uploads.js';
import type { BlobWrite } from '../../src/storage/blob-store.js';
import { DiskStore } from '../../src/storage/disk-store.js';

const databaseUrl = process.env.BENCH_DATABASE_URL || undefined;
const dataDir = process.env.BENCH_DATA_DIR ?? '';
if (!databaseUrl && !dataDir) throw new Error('BENCH_DATABASE_URL or BENCH_DATA_DIR is required');

const database = await connectDatabase({ databaseUrl, dataDir });
const { db } = database;
await migrateToLatest(db as never);
const { appId } = await createApp(db);
const { accessToken } = await issueToken(db, appId, 24 * 3600);
const bucketId = await createBucket(db, appId, { name: `floor-${randomBytes(4).toString('hex')}`, openToRead: true, openToUpload: false });

/** Bytes that are "already durable": the floor leaves the store out. */
function written(): BlobWrite {
  return {
    key: randomBytes(16).toString('hex'),
    size: 1024,
    sha256: randomBytes(32).toString('hex'),
    commit: async () => {},
    abort: async () => {},
  };
}
// Never written to: a commit that replaces no expired file removes no bytes.
const ctx = { db, storage: new DiskStore(os.tmpdir()), log: console };

let sequence = 0;
const server = http.createServer((request, response) => {
  if (request.method !== 'POST' || !request.url?.startsWith('/commit')) {
    response.writeHead(404).end();
    return;
  }
  request.resume();
  (async () => {
    const app = await appForToken(db, accessToken);
    const fileName = `floor-${++sequence}.bin`;
    const bucket = await authorizeUpload(db, app, bucketId, fileName);
    const stored = await commitUpload(ctx, written(), { ...bucket, fileName, aliveDays: 1 });
    return stored.fileKey;
  })().then(
    (fileKey) => {
      const body = JSON.stringify({ fileKey });
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    },
    (error: Error) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(error.message);
    },
  );
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => void database.close().finally(() => process.exit(0))));
