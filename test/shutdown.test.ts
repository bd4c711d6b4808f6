import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { connectDatabase, type DatabaseHandle } from '../db/connect.js';
import { createTestDatabase, seedEmbeddedCluster, serverUrl } from './helpers/database.js';
import { startServerProcess, waitFor, type ServerProcess } from './helpers/process.js';
import { upload, type UploadResult } from './helpers/upload.js';

const MiB = 1024 * 1024;
const APP_ID = 'shutdown-app';
const APP_SECRET = 'shutdown-secret-0123456789';

interface Started {
  server: ServerProcess;
  dataDir: string;
  params: { AccessToken: string; BucketId: number; AliveDays: number };
  /** Opens the database the server used, once it has exited. */
  openDatabase(): Promise<DatabaseHandle>;
}

async function start(t: Test, graceSeconds: number): Promise<Started> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'filestore-shutdown-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const database = serverUrl ? await createTestDatabase() : undefined;
  if (!database) await seedEmbeddedCluster(dataDir);
  if (database) {
    t.teardown(() => database.drop());
    await database.handle.close();
  }
  const server = await startServerProcess({
    DATA_DIR: dataDir,
    BOOTSTRAP_APPS: `${APP_ID}:${APP_SECRET}`,
    SHUTDOWN_GRACE_SECONDS: String(graceSeconds),
    ...(database?.url ? { DATABASE_URL: database.url } : {}),
  });
  t.teardown(() => server.stop('SIGKILL'));

  const token = await post(server.baseUrl, '/API/AccessToken', { AppId: APP_ID, AppSecret: APP_SECRET });
  const bucket = await post(server.baseUrl, '/API/CreateBucket', {
    AccessToken: token.AccessToken as string,
    BucketName: `shutdown-${process.pid}-${graceSeconds}`,
    OpenToRead: 'true',
    OpenToUpload: 'false',
  });
  return {
    server,
    dataDir,
    params: { AccessToken: token.AccessToken as string, BucketId: bucket.BucketId as number, AliveDays: 1 },
    openDatabase: async () => {
      const handle = database ? await database.openAnother() : await connectDatabase({ databaseUrl: undefined, dataDir });
      if (!database) t.teardown(() => handle.close());
      return handle;
    },
  };
}

async function post(baseUrl: string, url: string, fields: Record<string, string>): Promise<Record<string, unknown>> {
  const response = await fetch(`${baseUrl}${url}`, { method: 'POST', body: new URLSearchParams(fields) });
  const body = (await response.json()) as Record<string, unknown>;
  if (body.Code !== 0) throw new Error(`${url} failed: ${JSON.stringify(body)}`);
  return body;
}

async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

async function untilUploadStreams(dataDir: string): Promise<void> {
  const tmp = path.join(dataDir, 'files', 'tmp');
  await waitFor('the upload to reach the disk', async () => (await readdir(tmp)).length > 0, 120_000, 25);
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Opens a new connection (never a pooled one): 'connected' or the error code. */
function connectionOutcome(baseUrl: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/**
 * A request whose headers are half sent: its connection is busy, so it survives the listener
 * closing, and the rest of the request arrives during shutdown. Resolves with the raw response.
 */
function halfSentRequest(baseUrl: string, target: string) {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  socket.write(`GET ${target} HTTP/1.1\r\nHost: localhost\r\n`);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  const response = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  socket.on('error', () => {});
  return { finish: () => socket.write('\r\n'), response };
}

t.test('SIGTERM lets an upload that ends within the grace period complete; /ready and the API answer 503 meanwhile', async (t) => {
  const { server, dataDir, params, openDatabase } = await start(t, 20);
  const ready = halfSentRequest(server.baseUrl, '/ready');
  const api = halfSentRequest(server.baseUrl, `/API/ViewBucketDetail?BucketId=${params.BucketId}`);
  const uploading = upload({ baseUrl: server.baseUrl, query: params, fileName: 'finishes.bin', size: 4 * MiB, chunkDelayMs: 100 });
  await untilUploadStreams(dataDir);

  const signalled = Date.now();
  const exited = server.stop('SIGTERM');
  // The listener closes in the same tick as this line is written.
  await waitFor('the shutdown to begin', () => server.output().includes('"msg":"shutting down"'));
  t.equal(await connectionOutcome(server.baseUrl), 'ECONNREFUSED', 'new connections are refused');
  ready.finish();
  api.finish();
  const readyResponse = await ready.response;
  t.match(readyResponse, /^HTTP\/1\.1 503 /, '/ready is 503 while shutting down');
  t.match(readyResponse, /"Message":"Not ready: the service is shutting down\."/);
  const apiResponse = await api.response;
  t.match(apiResponse, /^HTTP\/1\.1 503 /);
  t.match(apiResponse, /connection: close/i);
  t.match(apiResponse, /\{"Code":-1,"Message":"The service is shutting down; send the request again\."\}/);

  const result: UploadResult = await uploading;
  t.equal(result.status, 200);
  t.equal(result.body.Code, 0, JSON.stringify(result.body));
  t.equal(await exited, 0, 'the process exits cleanly');
  t.ok(Date.now() - signalled < 10_000, 'idle keep-alive connections did not hold the shutdown for the grace period');

  const database = await openDatabase();
  const rows = await database.db.selectFrom('files').selectAll().execute();
  t.equal(rows.length, 1, 'the row is committed');
  t.equal(rows[0]?.sha256, result.sha256);
  const stored = await filesUnder(path.join(dataDir, 'files'));
  t.equal(stored.length, 1, 'one object, no temp file');
  t.equal(await sha256Of(stored[0] ?? ''), result.sha256, 'the bytes on disk are the bytes sent');
});

t.test('SIGTERM with a short grace period cuts a slow upload, which leaves nothing behind', async (t) => {
  const { server, dataDir, params, openDatabase } = await start(t, 1);
  // 32 chunks 100 ms apart: over 3 seconds, well past the 1 s grace period.
  const uploading = upload({ baseUrl: server.baseUrl, query: params, fileName: 'cut.bin', size: 8 * MiB, chunkDelayMs: 100 });
  await untilUploadStreams(dataDir);

  const cut = t.rejects(uploading, 'the client sees its connection closed');
  const signalled = Date.now();
  t.equal(await server.stop('SIGTERM'), 0, 'the process exits cleanly');
  t.ok(Date.now() - signalled < 6_000, 'within the grace period and the close timeout');
  t.match(server.output(), /grace period over: closing the connections still open/);
  await cut;

  const database = await openDatabase();
  t.same(await database.db.selectFrom('files').selectAll().execute(), [], 'no row');
  t.same(await filesUnder(path.join(dataDir, 'files')), [], 'no temp file, no object');
});

t.test('SIGTERM during several large uploads: the cut ones have their temp files removed before the process exits', async (t) => {
  const { server, dataDir, params, openDatabase } = await start(t, 1);
  // Uploads that send 256 MiB at full speed, slow ones and ones stalled early: none can finish within
  // the 1 s grace period. The fast ones pause before their end, so a slow machine that starts the
  // last upload late cannot see a fast one finish first.
  const uploads = Array.from({ length: 6 }, (_, i) =>
    upload({
      baseUrl: server.baseUrl,
      query: params,
      fileName: `large-${i}.bin`,
      size: 512 * MiB,
      chunkDelayMs: i % 3 === 1 ? 50 : 0,
      stallAfterBytes: i % 3 === 2 ? 4 * MiB : 256 * MiB,
    }),
  );
  const outcomes = Promise.allSettled(uploads);
  await waitFor('every upload to reach the disk', async () => (await readdir(path.join(dataDir, 'files', 'tmp'))).length === uploads.length);

  const exitCode = await server.stop('SIGTERM');
  const settled = await outcomes;
  t.equal(exitCode, 0, 'the process exits cleanly');
  t.ok(settled.every((outcome) => outcome.status === 'rejected' || outcome.value.body.Code !== 0), 'no upload could finish');
  t.same(await filesUnder(path.join(dataDir, 'files')), [], 'no temp file, no object is left');
  const database = await openDatabase();
  t.same(await database.db.selectFrom('files').selectAll().execute(), [], 'no row');
});
