import t from 'tap';
import { MAX_ID } from '../src/http/binding.js';
import { INVALID, UNKNOWN, NOT_YOURS, bucketRow, detail } from './helpers/bucket-calls.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { postForm, startService } from './helpers/service.js';
import { hasBytes, storeFile } from './helpers/stored-files.js';

t.test('DeleteBucket removes the bucket, its file rows and their bytes', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  const name = uniqueBucketName();
  const id = await createBucket(service, token, { name });
  const keep = await createBucket(service, token);
  const files = [await storeFile(service, id), await storeFile(service, id, { expired: true })];
  const kept = await storeFile(service, keep);
  await service.app.db
    .insertInto('download_secrets')
    .values({ secret_hash: `hash-${files[0].fileKey}`, file_key: files[0].fileKey, app_id: appId, uses_left: 3 })
    .execute();

  const response = await postForm(service.app, '/API/DeleteBucket', { AccessToken: token, BucketId: id });
  t.equal(response.statusCode, 200);
  t.strictSame(response.json(), { Message: 'Successfully deleted your bucket!', Code: 0 });

  t.equal(await bucketRow(service, id), undefined, 'the bucket row is gone');
  t.same(await service.app.db.selectFrom('files').select('file_key').where('bucket_id', '=', id).execute(), [], 'its file rows are gone');
  t.same(await service.app.db.selectFrom('download_secrets').selectAll().execute(), [], 'secrets of its files are gone');
  for (const file of files) t.notOk(await hasBytes(service.app.storage, file.storageKey), 'its bytes are gone');
  t.strictSame(await detail(service, id), UNKNOWN);

  t.ok(await bucketRow(service, keep), 'the other bucket stays');
  t.ok(await hasBytes(service.app.storage, kept.storageKey), 'and its bytes');
  t.equal((await detail(service, keep)).FileCount, 1);

  t.strictSame((await postForm(service.app, '/API/DeleteBucket', { AccessToken: token, BucketId: id })).json(), UNKNOWN, 'a second delete');
  t.equal(await createBucket(service, token, { name: name.toUpperCase() }) > 0, true, 'the name is free again');
});

t.test('DeleteBucket succeeds when a file’s bytes are already gone', async (t) => {
  const service = await startService(t);
  const { token } = await service.newApp();
  const id = await createBucket(service, token);
  const file = await storeFile(service, id);
  await service.app.storage.remove([file.storageKey]);
  t.strictSame((await postForm(service.app, '/API/DeleteBucket', { AccessToken: token, BucketId: id })).json().Code, 0);
  t.equal(await bucketRow(service, id), undefined);
});

t.test('DeleteBucket: only the owner; unknown buckets are refused; nothing changes', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const other = await service.newApp();
  const id = await createBucket(service, owner.token);
  const file = await storeFile(service, id);
  const before = await bucketRow(service, id);

  t.strictSame((await postForm(service.app, '/API/DeleteBucket', { AccessToken: other.token, BucketId: id })).json(), NOT_YOURS);
  t.same(await bucketRow(service, id), before, 'the bucket stays');
  t.ok(await service.app.db.selectFrom('files').select('file_key').where('file_key', '=', file.fileKey).executeTakeFirst(), 'its file row stays');
  t.ok(await hasBytes(service.app.storage, file.storageKey), 'its bytes stay');

  for (const unknown of [id + 1000, MAX_ID]) {
    t.strictSame((await postForm(service.app, '/API/DeleteBucket', { AccessToken: owner.token, BucketId: unknown })).json(), UNKNOWN);
  }
  t.strictSame((await postForm(service.app, '/API/DeleteBucket', { BucketId: 'x' })).json(), {
    Code: -10,
    Message: INVALID,
    Items: ['The AccessToken field is required.', "The value 'x' is not valid for BucketId."],
  });
});
