import t from 'tap';
import { MAX_ID } from '../src/http/binding.js';
import { INVALID, UNKNOWN } from './helpers/bucket-calls.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { postForm, startService } from './helpers/service.js';
import { storeFile } from './helpers/stored-files.js';

t.test('ViewBucketDetail needs no token and counts only live files', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  const name = uniqueBucketName();
  const id = await createBucket(service, token, { name, openToRead: false, openToUpload: true });
  await storeFile(service, id);
  await storeFile(service, id, { expired: true });

  const response = await service.app.inject({ url: `/API/ViewBucketDetailTry?BucketId=${id}` });
  t.equal(response.statusCode, 200);
  t.strictSame(response.json(), {
    BucketId: id,
    BucketName: name,
    OpenToRead: false,
    OpenToUpload: true,
    BelongingAppId: appId,
    FileCount: 1,
    Message: 'Successfully get your bucket detail!',
    Code: 0,
  });
});

t.test('ViewBucketDetail refuses unknown and malformed ids', async (t) => {
  const service = await startService(t);
  const { token } = await service.newApp();
  const deleted = await createBucket(service, token);
  await postForm(service.app, '/API/DeleteBucket', { AccessToken: token, BucketId: deleted });
  for (const id of [deleted, MAX_ID]) {
    const response = await service.app.inject({ url: `/API/ViewBucketDetail?BucketId=${id}` });
    t.equal(response.statusCode, 200);
    t.strictSame(response.json(), UNKNOWN, String(id));
  }
  t.strictSame((await service.app.inject({ url: '/API/ViewBucketDetail' })).json(), {
    Code: -10,
    Message: INVALID,
    Items: ['The BucketId field is required.'],
  });
  t.strictSame((await service.app.inject({ url: '/API/ViewBucketDetail?BucketId=1.5' })).json().Items, [
    "The value '1.5' is not valid for BucketId.",
  ]);
  t.strictSame((await service.app.inject({ url: `/API/ViewBucketDetail?BucketId=${MAX_ID}0` })).json().Items, [
    `The value '${MAX_ID}0' is not valid for BucketId.`,
  ]);
});

t.test('ViewMyBuckets lists the token’s own buckets by BucketId with live file counts', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  const other = await service.newApp();

  const empty = (await service.app.inject({ url: `/API/ViewMyBuckets?AccessToken=${token}` })).json();
  t.strictSame(empty, { AppId: appId, Buckets: [], Message: 'Successfully get your buckets!', Code: 0 });

  const names = [uniqueBucketName('c'), uniqueBucketName('a'), uniqueBucketName('b')];
  const ids: number[] = [];
  for (const [i, name] of names.entries()) {
    ids.push(await createBucket(service, token, { name, openToRead: i % 2 === 0, openToUpload: i === 1 }));
    await createBucket(service, other.token);
  }
  await storeFile(service, ids[0]);
  await storeFile(service, ids[0]);
  await storeFile(service, ids[0], { expired: true });
  await storeFile(service, ids[2], { expired: true });

  const response = await service.app.inject({ url: `/API/ViewMyBucketsTry?AccessToken=${token}` });
  t.equal(response.statusCode, 200);
  t.strictSame(response.json(), {
    AppId: appId,
    Buckets: [
      { BucketId: ids[0], BucketName: names[0], OpenToRead: true, OpenToUpload: false, BelongingAppId: appId, FileCount: 2 },
      { BucketId: ids[1], BucketName: names[1], OpenToRead: false, OpenToUpload: true, BelongingAppId: appId, FileCount: 0 },
      { BucketId: ids[2], BucketName: names[2], OpenToRead: true, OpenToUpload: false, BelongingAppId: appId, FileCount: 0 },
    ],
    Message: 'Successfully get your buckets!',
    Code: 0,
  });
  t.strictSame((await service.app.inject({ url: '/API/ViewMyBuckets' })).json().Items, ['The AccessToken field is required.']);
});
