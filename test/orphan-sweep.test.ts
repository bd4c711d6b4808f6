import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { ORPHAN_MIN_AGE_MS, sweepOrphans } from '../src/jobs/orphan-sweep.js';
import { createBucket } from './helpers/buckets.js';
import { startService } from './helpers/service.js';
import { exists, storeFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

const longAgo = new Date(Date.now() - 2 * ORPHAN_MIN_AGE_MS);

async function leftover(dir: string, name: string, old: boolean): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, name);
  await writeFile(file, 'left behind');
  if (old) await utimes(file, longAgo, longAgo);
  return file;
}

t.test('old temp files and old unreferenced objects go; referenced and young ones stay', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const kept = await storeFile(service, bucketId);
  await utimes(kept.bytesPath, longAgo, longAgo);
  const { tmpDir, objectsDir } = service.app.storage;
  const oldTemp = await leftover(tmpDir, 'aaaa.part', true);
  const youngTemp = await leftover(tmpDir, 'bbbb.part', false);
  const oldOrphan = await leftover(path.join(objectsDir, 'cc'), 'cc0123456789', true);
  const youngOrphan = await leftover(path.join(objectsDir, 'dd'), 'dd0123456789', false);

  t.same(await sweepOrphans(service.app.db, service.app.storage), { tempRemoved: 1, objectsRemoved: 1 });
  t.notOk(await exists(oldTemp));
  t.ok(await exists(youngTemp), 'an upload in progress is never touched');
  t.notOk(await exists(oldOrphan));
  t.ok(await exists(youngOrphan), 'bytes about to get their row are never touched');
  t.ok(await exists(kept.bytesPath), 'bytes with a row stay, however old');
  t.same(await sweepOrphans(service.app.db, service.app.storage), { tempRemoved: 0, objectsRemoved: 0 }, 'a second sweep finds nothing');
});

t.test('the sweep runs at start-up and never touches a file being uploaded', async (t) => {
  const service = await startService(t);
  // Left before the service is ready, as by a crash of the previous run.
  const stale = await leftover(service.app.storage.tmpDir, 'stale.part', true);
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const baseUrl = await service.listen();
  for (let i = 0; i < 50 && (await exists(stale)); i++) await sleep(20);
  t.notOk(await exists(stale), 'removed by the start-up sweep');

  // A sweep while a slow upload streams: the upload's temp file is young, so it stays.
  const slow = upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, size: 4 * 1024 * 1024, chunkDelayMs: 5 });
  for (let i = 0; i < 100 && (await readdir(service.app.storage.tmpDir)).length === 0; i++) await sleep(10);
  t.equal((await readdir(service.app.storage.tmpDir)).length, 1, 'the upload is streaming into a temp file');
  t.same(await sweepOrphans(service.app.db, service.app.storage), { tempRemoved: 0, objectsRemoved: 0 });
  const result = await slow;
  t.equal(result.body.Code, 0);
  const row = await service.app.db.selectFrom('files').select('sha256').where('file_key', '=', result.body.FileKey as number).executeTakeFirst();
  t.equal(row?.sha256, result.sha256);
});
