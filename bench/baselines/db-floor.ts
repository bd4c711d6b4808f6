/**
 * Baseline: the database work of the service alone, in a bare Fastify server (no plugins, no
 * logging, no validation), through the service's own functions on a pool made as the service's:
 * - POST /commit: what the service does in the database for each UploadFile (the token and bucket
 *   authorization in one query, the insert of commitUpload), with no multipart, no file and no fsync of bytes:
 *   how many uploads per second the database lets through, the "commit floor". Answers the new
 *   file's key, so the metadata case can read the rows it made.
 *   With `?size=N` the bytes are real: N bytes written to its own store (BENCH_FLOOR_STORAGE_DIR).
 * - POST /upload: the raw request body (the multipart bytes the service gets, never parsed or
 *   hashed) written to BENCH_UPLOAD_DIR with the bare upload server's durability steps (temp name,
 *   fsync, rename, folder fsync), between the same authorization and insert as /commit: the least
 *   an upload's durability asks, its bytes and its row, the "durable upload floor".
 * - GET /API/ViewOneFile?FileKey=N and GET /API/ViewMultiFiles?Ids=a,b: the same query as the
 *   service, answered with the same JSON, the "metadata floor".
 * - GET /Download/FromKey/N: the same indexed lookup as the service's download, then the file
 *   opened, read whole and closed, sent with its length: the "small download floor".
 *
 * On PostgreSQL it shares the bench's database with the service (its own app and bucket); the
 * embedded server belongs to one service per DATA_DIR, so it gets its own in BENCH_DATA_DIR.
 *
 * Run as a child process by the bench: prints {"port":N} once it listens.
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { Readable } from 'node:stream';
import Fastify from 'fastify';
import { connectDatabase } from '../../db/connect.js';
import { migrateToLatest } from '../../db/migrate.js';
import { succeeded } from '../../src/errors.js';
import { createApp } from '../../src/services/apps.js';
import { createBucket } from '../../src/services/buckets.js';
import { findPublicFileByKey } from '../../src/services/downloadable-files.js';
import { findLiveFile, findLiveFiles } from '../../src/services/files.js';
import { fileView } from '../../src/http/views.js';
import { issueToken } from '../../src/services/tokens.js';
import { authorizeTokenUpload, commitUpload } from '../../src/services/uploads.js';
import type { BlobWrite } from '../../src/storage/blob-store.js';
import { DiskResumableBytes } from '../../src/storage/disk/resumable-bytes.js';
import { DiskStore } from '../../src/storage/disk/store.js';
import { receiveFile } from './durable-file.js';

const databaseUrl = process.env.BENCH_DATABASE_URL || undefined;
const dataDir = process.env.BENCH_DATA_DIR ?? '';
const storageDir = process.env.BENCH_FLOOR_STORAGE_DIR ?? '';
const uploadDir = process.env.BENCH_UPLOAD_DIR ?? '';
if (!databaseUrl && !dataDir) throw new Error('BENCH_DATABASE_URL or BENCH_DATA_DIR is required');
if (!storageDir || !uploadDir) throw new Error('BENCH_FLOOR_STORAGE_DIR and BENCH_UPLOAD_DIR are required');

const database = await connectDatabase({ databaseUrl, dataDir });
const { db } = database;
await migrateToLatest(db as never);
const { appId } = await createApp(db);
const { accessToken } = await issueToken(db, appId, 24 * 3600);
const bucketId = await createBucket(db, appId, { name: `floor-${randomBytes(4).toString('hex')}`, openToRead: true, openToUpload: false });

/** Bytes that are "already durable": the floor leaves the store out. */
function written(size = 1024): BlobWrite {
  return {
    key: randomBytes(16).toString('hex'),
    size,
    sha256: randomBytes(32).toString('hex'),
    commit: async () => {},
    abort: async () => {},
  };
}
const storage = new DiskStore(storageDir);
await storage.prepare();
await mkdir(uploadDir, { recursive: true });
const ctx = { db, storage, resumable: new DiskResumableBytes(storage), log: console };

let sequence = 0;
const app = Fastify({ logger: false, keepAliveTimeout: 72_000 });
const baseUrl = 'http://127.0.0.1';

app.post<{ Querystring: { size?: string } }>('/commit', async (request) => {
  const size = Number(request.query.size ?? 0);
  const fileName = `floor-${++sequence}.bin`;
  const bucket = await authorizeTokenUpload(db, accessToken, bucketId, fileName);
  const bytes = size > 0 ? await storage.write(Readable.from([randomBytes(size)]), { maxBytes: size }) : written();
  const stored = await commitUpload(ctx, bytes, { ...bucket, fileName, aliveDays: 1 });
  return { fileKey: stored.fileKey };
});
// The body stays a stream, for the route to write as it arrives.
app.addContentTypeParser('multipart/form-data', (_request, payload, done) => done(null, payload));
app.post('/upload', async (request) => {
  const n = ++sequence;
  const fileName = `floor-${n}.bin`;
  const bucket = await authorizeTokenUpload(db, accessToken, bucketId, fileName);
  const bytes = await receiveFile(request.body as Readable, uploadDir, `floor-${process.pid}-${n}`, true);
  const stored = await commitUpload(ctx, written(bytes), { ...bucket, fileName, aliveDays: 1 });
  return { bytes, fileKey: stored.fileKey };
});
app.get<{ Params: { key: string } }>('/Download/FromKey/:key', async (request, reply) => {
  const file = await findPublicFileByKey(db, Number(request.params.key));
  if (!file) return reply.code(404).send();
  const bytes = await storage.read(file.storageKey, { start: 0, end: file.size - 1 });
  return reply.header('content-type', 'application/octet-stream').send(bytes);
});
app.get<{ Querystring: { FileKey: string } }>('/API/ViewOneFile', async (request) => {
  const row = await findLiveFile(db, Number(request.query.FileKey));
  return { Code: 0, Message: succeeded.file, File: fileView(row, baseUrl) };
});
app.get<{ Querystring: { Ids: string } }>('/API/ViewMultiFiles', async (request) => {
  const rows = await findLiveFiles(db, request.query.Ids.split(',').map(Number));
  return { Code: 0, Message: succeeded.files, Items: rows.map((row) => fileView(row, baseUrl)) };
});

const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ port: Number(new URL(address).port) })}\n`);
process.on('SIGTERM', () => void app.close().then(() => database.close()).finally(() => process.exit(0)));
