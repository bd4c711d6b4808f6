import { createHash, randomInt } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { connectDatabase } from '../db/connect.js';
import { ORPHAN_MIN_AGE_MS } from '../src/services/orphans.js';
import { serverData, startServerProcess, waitFor, type ServerProcess } from './helpers/process.js';
import { upload, type UploadResult } from './helpers/upload.js';

/**
 * kill -9 in the middle of uploads, at random moments, several times over: whatever was
 * acknowledged must survive whole, no row may point at missing or partial bytes, and what the
 * crash left on disk must be removed by the orphan sweep.
 */
const ROUNDS = 4;
const UPLOADS_PER_ROUND = 12;
const APP = { id: 'crash-app', secret: 'crash-app-secret-0123456789' };
const KiB = 1024;

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

const form = (fields: Record<string, string>) => ({ method: 'POST', body: new URLSearchParams(fields) });

async function tokenOf(base: string): Promise<string> {
  const response = await fetch(`${base}/API/AccessToken`, form({ AppId: APP.id, AppSecret: APP.secret }));
  return ((await response.json()) as { AccessToken: string }).AccessToken;
}

async function bucketOf(base: string, token: string, name: string): Promise<number> {
  const response = await fetch(`${base}/API/CreateBucket`, form({ AccessToken: token, BucketName: name, OpenToRead: 'true', OpenToUpload: 'false' }));
  return ((await response.json()) as { BucketId: number }).BucketId;
}

/**
 * What must hold after any crash or shutdown: every acknowledged upload is there whole, every row's
 * bytes exist with its size and sha256, and no bytes are left without a row.
 */
async function verifyStore(
  t: Test,
  where: { databaseUrl: string | undefined; dataDir: string; storageDir: string },
  acknowledged: readonly UploadResult[],
): Promise<void> {
  const handle = await connectDatabase({ databaseUrl: where.databaseUrl, dataDir: where.dataDir });
  const rows = await handle.db.selectFrom('files').select(['file_key', 'storage_key', 'sha256', 'size_bytes']).execute();
  await handle.close();
  const objectsDir = path.join(where.storageDir, 'objects');
  const byKey = new Map(rows.map((row) => [row.file_key, row]));
  for (const done of acknowledged) {
    t.equal(byKey.get(done.body.FileKey as number)?.sha256, done.sha256, `acknowledged file ${done.body.FileKey} is there, whole`);
  }
  for (const row of rows) {
    const file = path.join(objectsDir, row.storage_key.slice(0, 2), row.storage_key);
    t.equal((await stat(file)).size, row.size_bytes, `file ${row.file_key}: size`);
    t.equal(await sha256Of(file), row.sha256, `file ${row.file_key}: content`);
  }
  const objects = (await filesUnder(objectsDir)).map((file) => path.basename(file)).sort();
  t.same(objects, rows.map((row) => row.storage_key).sort(), 'exactly the bytes with a row remain');
}

t.test('kill -9 during uploads loses nothing acknowledged and leaves nothing half-written', async (t) => {
  const data = await serverData(t, 'crash');
  const storageDir = path.join(data.dataDir, 'files');
  const env = { ...data.env, BOOTSTRAP_APPS: `${APP.id}:${APP.secret}` };
  let server: ServerProcess | undefined;
  t.teardown(() => server?.stop('SIGKILL'));

  const acknowledged: UploadResult[] = [];
  let interrupted = 0;
  let bucketId: number | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    server = await startServerProcess(env);
    const base = server.baseUrl;
    const token = await tokenOf(base);
    bucketId ??= await bucketOf(base, token, `crash-${process.pid}`);
    // Mixed sizes and speeds, so the kill finds uploads streaming, committing and done.
    const uploads = Promise.allSettled(Array.from({ length: UPLOADS_PER_ROUND }, (_, i) =>
      upload({
        baseUrl: base,
        [i % 2 ? 'before' : 'after']: { AccessToken: token, BucketId: bucketId as number, AliveDays: 1 },
        fileName: `round-${round}-${i}.bin`,
        // A third are slow enough to be streaming whenever the kill comes.
        size: i % 3 === 0 ? 8 * 1024 * KiB : randomInt(1, 4096) * KiB,
        chunkDelayMs: i % 3 === 0 ? 100 : 0,
      }),
    ));
    await sleep(randomInt(50, 600));
    await server.stop('SIGKILL');
    for (const outcome of await uploads) {
      if (outcome.status === 'fulfilled' && outcome.value.body.Code === 0) acknowledged.push(outcome.value);
      else interrupted += 1;
    }
  }
  t.comment(`${ROUNDS} kills, ${acknowledged.length} uploads acknowledged, ${interrupted} cut off`);
  t.ok(interrupted > 0, 'some uploads were cut off by a kill');

  // The crashes left temp files or unreferenced bytes, or none: make them all old enough to judge,
  // then restart: the start-up sweep must remove exactly what has no row.
  const longAgo = new Date(Date.now() - 2 * ORPHAN_MIN_AGE_MS);
  for (const file of await filesUnder(storageDir)) await utimes(file, longAgo, longAgo);
  const leftBehind = (await filesUnder(path.join(storageDir, 'tmp'))).length;
  // At debug level the sweep logs when it has run.
  server = await startServerProcess({ ...env, LOG_LEVEL: 'debug' });
  await waitFor('the start-up sweep to empty tmp/', async () => (await filesUnder(path.join(storageDir, 'tmp'))).length === 0);
  await waitFor('the start-up sweep to finish', () => server?.output().includes('"job":"orphan-sweep"') ?? false);
  await server.stop('SIGTERM');
  server = undefined;
  t.comment(`${leftBehind} temp files were left by the kills`);
  t.same(await filesUnder(path.join(storageDir, 'tmp')), [], 'the sweep removed every temp file');

  await verifyStore(t, { databaseUrl: data.databaseUrl, dataDir: data.dataDir, storageDir }, acknowledged);
});

t.test('SIGTERM under load: every upload completes wholly or leaves nothing', async (t) => {
  const data = await serverData(t, 'sigterm');
  const storageDir = path.join(data.dataDir, 'files');
  const env = { ...data.env, BOOTSTRAP_APPS: `${APP.id}:${APP.secret}`, SHUTDOWN_GRACE_SECONDS: '2' };
  let server: ServerProcess | undefined;
  t.teardown(() => server?.stop('SIGKILL'));

  const acknowledged: UploadResult[] = [];
  let refused = 0;
  let bucketId: number | undefined;
  for (let round = 0; round < 3; round++) {
    server = await startServerProcess(env);
    const base = server.baseUrl;
    const token = await tokenOf(base);
    bucketId ??= await bucketOf(base, token, `sigterm-${process.pid}`);
    // Fast uploads finish within the grace period; the slowest ones cannot and are cut.
    const uploads = Promise.allSettled(Array.from({ length: 16 }, (_, i) =>
      upload({
        baseUrl: base,
        query: { AccessToken: token, BucketId: bucketId as number, AliveDays: 1 },
        fileName: `term-${round}-${i}.bin`,
        size: i % 4 === 0 ? 8 * 1024 * KiB : randomInt(1, 2048) * KiB,
        chunkDelayMs: i % 4 === 0 ? 300 : 0,
      }),
    ));
    await sleep(randomInt(100, 400));
    t.equal(await server.stop('SIGTERM'), 0, `round ${round}: the process exits cleanly within its grace`);
    for (const outcome of await uploads) {
      if (outcome.status === 'fulfilled' && outcome.value.body.Code === 0) acknowledged.push(outcome.value);
      else refused += 1;
    }
    t.same(await filesUnder(path.join(storageDir, 'tmp')), [], `round ${round}: no temp file is left`);
  }
  server = undefined;
  t.comment(`3 shutdowns under load: ${acknowledged.length} uploads completed, ${refused} refused or cut`);
  t.ok(refused > 0 && acknowledged.length > 0, 'some uploads finished within the grace and some were cut');
  await verifyStore(t, { databaseUrl: data.databaseUrl, dataDir: data.dataDir, storageDir }, acknowledged);
});
