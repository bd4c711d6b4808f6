import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { sweepExpired } from '../src/services/expiry.js';
import type { BlobStore } from '../src/storage/blob-store.js';
import { hashSecret } from '../src/services/secret-hashing.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { download } from './helpers/download.js';
import { postForm, startService, testDatabase, type TestService } from './helpers/service.js';
import { hasBytes, storeFile, type StoredFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

const NOT_FOUND = { Code: -1, Message: 'Could not find that file.' };
const DAY_MS = 86_400_000;

/** Moves a file's upload into the past, so that its AliveDays have run out a moment ago. */
async function age(service: TestService, fileKey: number): Promise<void> {
  const row = await service.app.db.selectFrom('files').select('alive_days').where('file_key', '=', fileKey).executeTakeFirstOrThrow();
  const uploadTime = new Date(Date.now() - row.alive_days * DAY_MS - 1000);
  await service.app.db
    .updateTable('files')
    .set({ upload_time: uploadTime, expires_at: new Date(uploadTime.getTime() + row.alive_days * DAY_MS) })
    .where('file_key', '=', fileKey)
    .execute();
}

async function rowExists(service: TestService, fileKey: number): Promise<boolean> {
  return (await service.app.db.selectFrom('files').select('file_key').where('file_key', '=', fileKey).executeTakeFirst()) !== undefined;
}

/** The store, with the size of every remove() call written down. */
function recordingRemovals(store: BlobStore, batches: number[]): BlobStore {
  return new Proxy(store, {
    get(target, name) {
      if (name === 'remove') {
        return async (keys: readonly string[]) => {
          batches.push(keys.length);
          await target.remove(keys);
        };
      }
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Clears what earlier tests of this file left expired, so counts below are exact. */
async function sweepLeftovers(service: TestService): Promise<void> {
  await sweepExpired(service.context());
}

t.test('an expired file is gone everywhere at once, before any sweep', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketName = uniqueBucketName('exp');
  const bucketId = await createBucket(service, owner.token, { name: bucketName });
  const uploaded = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 2 }, fileName: 'soon.txt', size: 100 });
  const fileKey = uploaded.body.FileKey as number;
  const { Value } = (await service.app.inject({ url: `/Secret/Generate?AccessToken=${owner.token}&Id=${fileKey}&MaxUseTimes=5` })).json();
  t.equal((await download(baseUrl, `/${bucketName}/soon.txt`)).status, 200, 'served while alive');

  await age(service, fileKey);

  t.same((await service.app.inject({ url: `/API/ViewOneFile?FileKey=${fileKey}` })).json(), NOT_FOUND);
  t.same((await service.app.inject({ url: `/API/ViewMultiFiles?Ids=${fileKey}` })).json().Items, []);
  t.same((await service.app.inject({ url: `/API/ViewAllFiles?AccessToken=${owner.token}&BucketId=${bucketId}` })).json().AllFiles, []);
  t.equal((await service.app.inject({ url: `/API/ViewBucketDetail?BucketId=${bucketId}` })).json().FileCount, 0);
  t.same((await download(baseUrl, `/${bucketName}/soon.txt`)).json, NOT_FOUND);
  t.same((await download(baseUrl, `/Download/FromKey/${fileKey}`)).json, NOT_FOUND);
  t.equal((await download(baseUrl, `/Download/FromKey/${fileKey}`, { method: 'HEAD' })).status, 404);
  t.same((await download(baseUrl, `/Download/FromSecret?sec=${Value}`)).json, NOT_FOUND);
  t.same((await service.app.inject({ url: `/Secret/Generate?AccessToken=${owner.token}&Id=${fileKey}` })).json(), NOT_FOUND);
  t.same((await postForm(service.app, '/API/DeleteFile', { AccessToken: owner.token, FileKey: fileKey })).json(), NOT_FOUND);
  t.ok(await rowExists(service, fileKey), 'the row is still there: nothing was swept');

  // The name is free again: a new upload takes it and the expired one gives way.
  const again = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'soon.txt', size: 10 });
  t.equal(again.body.Code, 0);
  t.equal((await download(baseUrl, `/${bucketName}/soon.txt`)).sha256, again.sha256);
});

t.test('the sweeper removes expired rows and bytes in batches, with expired tokens and used-up secrets', async (t) => {
  const service = await startService(t);
  await sweepLeftovers(service);
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const expired: StoredFile[] = [];
  for (let i = 0; i < 23; i++) expired.push(await storeFile(service, bucketId, { expired: true }));
  const live = [await storeFile(service, bucketId), await storeFile(service, bucketId)];
  await service.app.db.insertInto('access_tokens').values({ token_hash: 'expired-token', app_id: owner.appId, expires_at: new Date(Date.now() - 1000) }).execute();
  await service.app.db
    .insertInto('download_secrets')
    .values([
      { secret_hash: hashSecret('used-up'), file_key: live[0]!.fileKey, app_id: owner.appId, uses_left: 0 },
      { secret_hash: hashSecret('usable'), file_key: live[0]!.fileKey, app_id: owner.appId, uses_left: 1 },
    ])
    .execute();

  const batches: number[] = [];
  const result = await sweepExpired({ ...service.context(), storage: recordingRemovals(service.app.storage, batches) }, 5);
  t.same(result, { files: 23, tokens: 1, secrets: 1 });
  t.same(batches, [5, 5, 5, 5, 3], 'rows and bytes go batch by batch');
  for (const file of expired) {
    t.notOk(await rowExists(service, file.fileKey));
    t.notOk(await hasBytes(service.app.storage, file.storageKey), 'bytes removed');
  }
  for (const file of live) {
    t.ok(await rowExists(service, file.fileKey));
    t.ok(await hasBytes(service.app.storage, file.storageKey));
  }
  t.ok(await service.newApp(), 'live tokens still work');
  const secrets = await service.app.db.selectFrom('download_secrets').select('uses_left').execute();
  t.same(secrets, [{ uses_left: 1 }]);
  t.same(await sweepExpired(service.context(), 5), { files: 0, tokens: 0, secrets: 0 }, 'nothing left to sweep');
});

t.test('two instances sweeping at once remove each expired file exactly once', async (t) => {
  const database = await testDatabase();
  const first = await startService(t);
  const second = await startService(t, { database: await database.openAnother(), env: { STORAGE_DIR: first.config.storageDir } });
  await sweepLeftovers(first);
  const owner = await first.newApp();
  const bucketId = await createBucket(first, owner.token);
  const expired: StoredFile[] = [];
  for (let i = 0; i < 120; i++) expired.push(await storeFile(first, bucketId, { expired: true }));

  const results = await Promise.all([sweepExpired(first.context(), 10), sweepExpired(second.context(), 10), sweepExpired(first.context(), 7)]);
  t.equal(results.reduce((sum, r) => sum + r.files, 0), 120, `each counted once: ${results.map((r) => r.files).join(' + ')}`);
  const left = await first.app.db.selectFrom('files').select('file_key').where('bucket_id', '=', bucketId).execute();
  t.same(left, []);
  for (const file of expired) t.notOk(await hasBytes(first.app.storage, file.storageKey));
});

t.test('the sweep job runs on every instance at SWEEP_INTERVAL_SECONDS', async (t) => {
  const database = await testDatabase();
  const first = await startService(t, { env: { SWEEP_INTERVAL_SECONDS: '1' } });
  const second = await startService(t, { database: await database.openAnother(), env: { SWEEP_INTERVAL_SECONDS: '1', STORAGE_DIR: first.config.storageDir } });
  await Promise.all([first.app.ready(), second.app.ready()]);
  const owner = await first.newApp();
  const bucketId = await createBucket(first, owner.token);
  const expired: StoredFile[] = [];
  for (let i = 0; i < 30; i++) expired.push(await storeFile(first, bucketId, { expired: true }));
  const live = await storeFile(first, bucketId);

  const started = Date.now();
  const anyBytesLeft = async () => (await Promise.all(expired.map((file) => hasBytes(first.app.storage, file.storageKey)))).some(Boolean);
  while ((await anyBytesLeft()) && Date.now() - started < 5000) await sleep(100);
  for (const file of expired) {
    t.notOk(await rowExists(first, file.fileKey));
    t.notOk(await hasBytes(first.app.storage, file.storageKey));
  }
  t.ok(await rowExists(first, live.fileKey));
  const errors = [...first.logs, ...second.logs].filter((line) => JSON.parse(line).level >= 50);
  t.same(errors, [], 'no sweeper failed');
});
