import { createHash, randomInt } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, rm, stat, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { connectDatabase } from '../db/connect.js';
import { ORPHAN_MIN_AGE_MS } from '../src/jobs/orphan-sweep.js';
import { createTestDatabase } from './helpers/database.js';
import { startServerProcess, type ServerProcess } from './helpers/process.js';
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

t.test('kill -9 during uploads loses nothing acknowledged and leaves nothing half-written', async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'filestore-crash-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  if (database.url) await database.handle.close();
  const storageDir = path.join(dataDir, 'files');
  const env = {
    DATA_DIR: dataDir,
    BOOTSTRAP_APPS: `${APP.id}:${APP.secret}`,
    ...(database.url ? { DATABASE_URL: database.url } : {}),
  };
  let server: ServerProcess | undefined;
  t.teardown(() => server?.stop('SIGKILL'));

  const acknowledged: UploadResult[] = [];
  let interrupted = 0;
  let bucketId: number | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    server = await startServerProcess(env);
    const base = server.baseUrl;
    const form = (fields: Record<string, string>) => ({ method: 'POST', body: new URLSearchParams(fields) });
    const token = ((await (await fetch(`${base}/API/AccessToken`, form({ AppId: APP.id, AppSecret: APP.secret }))).json()) as { AccessToken: string }).AccessToken;
    if (bucketId === undefined) {
      const created = await fetch(`${base}/API/CreateBucket`, form({ AccessToken: token, BucketName: `crash-${process.pid}`, OpenToRead: 'true', OpenToUpload: 'false' }));
      bucketId = ((await created.json()) as { BucketId: number }).BucketId;
    }
    // Mixed sizes and speeds, so the kill finds uploads streaming, committing and done.
    const uploads = Promise.allSettled(Array.from({ length: UPLOADS_PER_ROUND }, (_, i) =>
      upload({
        baseUrl: base,
        [i % 2 ? 'before' : 'after']: { AccessToken: token, BucketId: bucketId as number, AliveDays: 1 },
        fileName: `round-${round}-${i}.bin`,
        size: randomInt(1, 4096) * KiB,
        chunkDelayMs: i % 3 === 0 ? 2 : 0,
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
  server = await startServerProcess(env);
  const objectsDir = path.join(storageDir, 'objects');
  for (let i = 0; i < 100 && (await filesUnder(path.join(storageDir, 'tmp'))).length > 0; i++) await sleep(100);
  await sleep(500);
  await server.stop('SIGTERM');
  server = undefined;
  t.comment(`${leftBehind} temp files were left by the kills`);
  t.same(await filesUnder(path.join(storageDir, 'tmp')), [], 'the sweep removed every temp file');

  const handle = await connectDatabase({ databaseUrl: database.url, dataDir });
  const rows = await handle.db.selectFrom('files').select(['file_key', 'storage_key', 'sha256', 'size_bytes']).execute();
  await handle.close();

  // Nothing acknowledged was lost.
  const byKey = new Map(rows.map((row) => [row.file_key, row]));
  for (const done of acknowledged) {
    const row = byKey.get(done.body.FileKey as number);
    t.equal(row?.sha256, done.sha256, `acknowledged file ${done.body.FileKey} is there, whole`);
  }
  // No row points at missing or partial bytes, and no bytes are without a row.
  for (const row of rows) {
    const file = path.join(objectsDir, row.storage_key.slice(0, 2), row.storage_key);
    t.equal((await stat(file)).size, row.size_bytes, `file ${row.file_key}: size`);
    t.equal(await sha256Of(file), row.sha256, `file ${row.file_key}: content`);
  }
  const objects = (await filesUnder(objectsDir)).map((file) => path.basename(file)).sort();
  t.same(objects, rows.map((row) => row.storage_key).sort(), 'exactly the bytes with a row remain');
});
