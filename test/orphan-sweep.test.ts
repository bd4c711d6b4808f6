import { mkdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { ORPHAN_MIN_AGE_MS, sweepOrphans } from '../src/services/orphans.js';
import { createBucket } from './helpers/buckets.js';
import { diskStoreOf, onlyOnDisk, startService } from './helpers/service.js';
import { incompleteWrites, putBytes, storedKeys, storeFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

const longAgo = new Date(Date.now() - 2 * ORPHAN_MIN_AGE_MS);

/** A file of the disk store's, backdated when `old`: what a crash of an earlier run leaves. */
async function leftover(file: string, old: boolean): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, 'left behind');
  if (old) await utimes(file, longAgo, longAgo);
}

// Backdating is done on the disk store's files (an S3 server keeps its own times); s3-store.test.ts sweeps S3.
const backdates = onlyOnDisk('backdates files in the storage folder');

t.test('old incomplete writes and old unreferenced objects go; referenced and young ones stay', { skip: backdates }, async (t) => {
  const service = await startService(t);
  const store = diskStoreOf(service);
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const kept = await storeFile(service, bucketId);
  await utimes(path.join(store.objectsDir, kept.storageKey.slice(0, 2), kept.storageKey), longAgo, longAgo);
  const [oldOrphan, youngOrphan] = [await putBytes(store, Buffer.from('old')), await putBytes(store, Buffer.from('young'))];
  await utimes(path.join(store.objectsDir, oldOrphan.slice(0, 2), oldOrphan), longAgo, longAgo);
  await leftover(path.join(store.tmpDir, 'aaaa.part'), true);
  await leftover(path.join(store.tmpDir, 'bbbb.part'), false);

  t.same(await sweepOrphans({ db: service.app.db, storage: store }), { incompleteWritesRemoved: 1, objectsRemoved: 1 });
  t.same(await incompleteWrites(store), ['bbbb'], 'an upload in progress is never touched');
  t.same(await storedKeys(store), [kept.storageKey, youngOrphan].sort(), 'bytes with a row stay, however old, and young bytes about to get their row stay');
  t.same(await sweepOrphans({ db: service.app.db, storage: store }), { incompleteWritesRemoved: 0, objectsRemoved: 0 }, 'a second sweep finds nothing');
});

t.test('the sweep runs at start-up', { skip: backdates }, async (t) => {
  const service = await startService(t);
  const store = diskStoreOf(service);
  // Left before the service is ready, as by a crash of the previous run.
  await leftover(path.join(store.tmpDir, 'stale.part'), true);
  await service.listen();
  for (let i = 0; i < 50 && (await incompleteWrites(store)).length > 0; i++) await sleep(20);
  t.same(await incompleteWrites(store), [], 'removed by the start-up sweep');
});

t.test('a sweep never touches a file being uploaded', async (t) => {
  const service = await startService(t);
  const store = service.app.storage;
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const baseUrl = await service.listen();

  // A sweep while a slow upload streams: its incomplete write is young, so it stays. (Larger than a
  // part of the S3 store's, so that there it is an incomplete multipart upload, not one PUT at the end.)
  const slow = upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, size: 8 * 1024 * 1024, chunkDelayMs: 5 });
  for (let i = 0; i < 100 && (await incompleteWrites(store)).length === 0; i++) await sleep(10);
  t.equal((await incompleteWrites(store)).length, 1, 'the upload is streaming in');
  t.same(await sweepOrphans({ db: service.app.db, storage: store }), { incompleteWritesRemoved: 0, objectsRemoved: 0 });
  const result = await slow;
  t.equal(result.body.Code, 0);
  const row = await service.app.db.selectFrom('files').select('sha256').where('file_key', '=', result.body.FileKey as number).executeTakeFirst();
  t.equal(row?.sha256, result.sha256);
});
