import { sql } from 'kysely';
import t from 'tap';
import { deleteApp } from '../src/services/apps.js';
import { deleteBucket } from '../src/services/buckets.js';
import type { BlobStore } from '../src/storage/blob-store.js';
import { createBucket } from './helpers/buckets.js';
import { postForm, startService, type TestService } from './helpers/service.js';
import { hasBytes, storeFile, type StoredFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

async function rowsOf(service: TestService, bucketId: number): Promise<number> {
  const row = await service.app.db
    .selectFrom('files')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('bucket_id', '=', bucketId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Rows without bytes, in one statement: what bucket deletion does with rows does not depend on bytes. */
async function insertRows(service: TestService, bucketId: number, count: number): Promise<void> {
  await sql`
    INSERT INTO files (bucket_id, real_file_name, file_extension, size_bytes, upload_time, alive_days, expires_at, storage_key, sha256)
    SELECT ${bucketId}, 'row-' || i, '', 0, now(), 1, now() + interval '1 day', 'r' || ${bucketId} || 'x' || i, ''
    FROM generate_series(1, ${count}) AS i`.execute(service.app.db);
}

/**
 * The store, with each remove() call written down; the call for batch number `holdAt` (from 1)
 * waits until `release` is called, so a test can look at the service in the middle of a deletion.
 */
function heldStore(store: BlobStore, holdAt: number) {
  const batches: number[] = [];
  let release!: () => void;
  let reached!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const held = new Promise<void>((resolve) => (reached = resolve));
  const proxy = new Proxy(store, {
    get(target, name) {
      if (name === 'remove') {
        return async (keys: readonly string[]) => {
          batches.push(keys.length);
          if (batches.length === holdAt) {
            reached();
            await released;
          }
          await target.remove(keys);
        };
      }
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { proxy, batches, held, release };
}

t.test('DeleteBucket removes a large bucket in committed batches while other requests are answered', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const neighbour = await createBucket(service, owner.token);
  const stored: StoredFile[] = [];
  for (let i = 0; i < 5; i++) stored.push(await storeFile(service, bucketId));
  await insertRows(service, bucketId, 2995);
  const neighbourFile = await storeFile(service, neighbour);
  t.equal(await rowsOf(service, bucketId), 3000);

  const store = heldStore(service.app.storage, 2);
  const deletion = deleteBucket({ ...service.context(), storage: store.proxy }, owner.appId, bucketId);
  await store.held;
  // Between batches: what the first two removed is committed and visible to every other connection.
  t.equal(await rowsOf(service, bucketId), 1000, 'two batches of 1000 rows are gone, committed');
  t.equal((await service.app.inject({ url: `/API/ViewBucketDetail?BucketId=${bucketId}` })).json().FileCount, 1000, 'FileCount follows the batches');
  const late = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'late.txt', size: 10 });
  t.equal(late.body.Code, 0, 'an upload into the bucket is answered during the deletion');
  const view = (await service.app.inject({ url: `/API/ViewOneFile?FileKey=${neighbourFile.fileKey}` })).json();
  t.equal(view.Code, 0, 'a read of another bucket is answered during the deletion');
  store.release();
  await deletion;

  t.same(store.batches.slice(0, 3), [1000, 1000, 1000], 'removed in batches of 1000');
  t.equal(await rowsOf(service, bucketId), 0, 'every row is gone, the late upload’s included');
  t.equal(await service.app.db.selectFrom('buckets').select('bucket_id').where('bucket_id', '=', bucketId).executeTakeFirst(), undefined, 'the bucket is gone');
  for (const file of stored) t.notOk(await hasBytes(service.app.storage, file.storageKey), 'bytes removed');
  const lateRow = await service.app.db.selectFrom('files').select('file_key').where('file_key', '=', late.body.FileKey as number).executeTakeFirst();
  t.equal(lateRow, undefined, 'the late upload’s row is gone');
  t.ok(await hasBytes(service.app.storage, neighbourFile.storageKey), 'the other bucket keeps its bytes');
  t.equal(await rowsOf(service, neighbour), 1);
});

t.test('DeleteBucket through the API removes rows and bytes of a bucket larger than a batch', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const stored: StoredFile[] = [];
  for (let i = 0; i < 3; i++) stored.push(await storeFile(service, bucketId));
  await insertRows(service, bucketId, 1500);
  const answer = await postForm(service.app, '/API/DeleteBucket', { AccessToken: owner.token, BucketId: bucketId });
  t.same(answer.json(), { Code: 0, Message: 'Successfully deleted your bucket!' });
  t.equal(await rowsOf(service, bucketId), 0);
  for (const file of stored) t.notOk(await hasBytes(service.app.storage, file.storageKey));
});

t.test('DeleteApp removes every bucket’s files in batches, then the app', async (t) => {
  const service = await startService(t);
  const doomed = await service.newApp();
  const bystander = await service.newApp();
  const first = await createBucket(service, doomed.token);
  const second = await createBucket(service, doomed.token);
  const kept = await createBucket(service, bystander.token);
  const stored = [await storeFile(service, first), await storeFile(service, second)];
  await insertRows(service, first, 2100);
  await insertRows(service, second, 10);
  const keptFile = await storeFile(service, kept);

  const store = heldStore(service.app.storage, 2);
  const deletion = deleteApp({ ...service.context(), storage: store.proxy }, doomed.appId, doomed.appId);
  await store.held;
  t.equal(await rowsOf(service, first), 101, 'the first bucket is being emptied a batch at a time');
  t.equal((await postForm(service.app, '/API/AccessToken', { AppId: bystander.appId, AppSecret: bystander.appSecret })).json().Code, 0, 'another app is answered meanwhile');
  store.release();
  await deletion;

  t.equal(await rowsOf(service, first), 0);
  t.equal(await rowsOf(service, second), 0);
  const buckets = await service.app.db.selectFrom('buckets').select('bucket_id').where('app_id', '=', doomed.appId).execute();
  t.same(buckets, [], 'its buckets are gone');
  t.equal(await service.app.db.selectFrom('apps').select('app_id').where('app_id', '=', doomed.appId).executeTakeFirst(), undefined, 'the app is gone');
  for (const file of stored) t.notOk(await hasBytes(service.app.storage, file.storageKey), 'bytes removed');
  t.ok(await hasBytes(service.app.storage, keptFile.storageKey), 'another app’s bytes stay');
});
