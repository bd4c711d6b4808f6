import t from 'tap';
import { MAX_ID } from '../src/http/binding.js';
import { INVALID, NAME_TAKEN, UNKNOWN, NOT_YOURS, bucketRow, detail } from './helpers/bucket-calls.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { postForm, startService, testDatabase } from './helpers/service.js';

t.test('EditBucket replaces the name and both flags', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  const id = await createBucket(service, token, { openToRead: true, openToUpload: false });
  const newName = uniqueBucketName('Renamed');
  const response = await postForm(service.app, '/API/EditBucket', {
    AccessToken: token,
    BucketId: id,
    NewBucketName: newName,
    OpenToRead: false,
    OpenToUpload: true,
  });
  t.equal(response.statusCode, 200);
  t.strictSame(response.json(), { Message: 'Successfully edited your bucket!', Code: 0 });
  t.match(await bucketRow(service, id), { name: newName, open_to_read: false, open_to_upload: true, app_id: appId });
  t.match(await detail(service, id), { BucketName: newName, OpenToRead: false, OpenToUpload: true });
});

t.test('EditBucket may keep the bucket’s own name, in the same or another case', async (t) => {
  const service = await startService(t);
  const { token } = await service.newApp();
  const name = uniqueBucketName('Keep');
  const id = await createBucket(service, token, { name, openToRead: true, openToUpload: true });
  const edit = (newName: string) =>
    postForm(service.app, '/API/EditBucket', { AccessToken: token, BucketId: id, NewBucketName: newName, OpenToRead: false, OpenToUpload: false });

  t.equal((await edit(name)).json().Code, 0, 'same name');
  t.match(await bucketRow(service, id), { name, open_to_read: false, open_to_upload: false });
  t.equal((await edit(name.toUpperCase())).json().Code, 0, 'same name, other case');
  t.match(await bucketRow(service, id), { name: name.toUpperCase() });
});

t.test('EditBucket refuses a name another bucket holds and changes nothing', async (t) => {
  const service = await startService(t);
  const one = await service.newApp();
  const two = await service.newApp();
  const mine = uniqueBucketName('Mine');
  const sibling = uniqueBucketName('Sibling');
  const theirs = uniqueBucketName('Theirs');
  const id = await createBucket(service, one.token, { name: mine, openToRead: true, openToUpload: false });
  await createBucket(service, one.token, { name: sibling });
  await createBucket(service, two.token, { name: theirs });
  const before = await bucketRow(service, id);

  for (const taken of [sibling, sibling.toUpperCase(), theirs, theirs.toLowerCase()]) {
    const response = await postForm(service.app, '/API/EditBucket', {
      AccessToken: one.token,
      BucketId: id,
      NewBucketName: taken,
      OpenToRead: false,
      OpenToUpload: true,
    });
    t.strictSame(response.json(), NAME_TAKEN, taken);
  }
  t.same(await bucketRow(service, id), before, 'neither name nor flags changed');
});

t.test('EditBucket: only the owner may edit; unknown buckets are refused', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const other = await service.newApp();
  const id = await createBucket(service, owner.token, { openToRead: true, openToUpload: false });
  const taken = uniqueBucketName('Taken');
  await createBucket(service, other.token, { name: taken });
  const before = await bucketRow(service, id);
  const edit = (token: string, bucketId: number | string, newName: string) =>
    postForm(service.app, '/API/EditBucket', { AccessToken: token, BucketId: bucketId, NewBucketName: newName, OpenToRead: false, OpenToUpload: true });

  t.strictSame((await edit(other.token, id, uniqueBucketName())).json(), NOT_YOURS);
  t.strictSame((await edit(other.token, id, taken)).json(), NOT_YOURS, 'ownership is decided before the name');
  t.same(await bucketRow(service, id), before, 'the bucket is unchanged');

  t.strictSame((await edit(owner.token, id + 1000, uniqueBucketName())).json(), UNKNOWN);
  t.strictSame((await edit(owner.token, MAX_ID, uniqueBucketName())).json(), UNKNOWN, 'the largest id is looked up, not a fault');
});

t.test('EditBucket validation', async (t) => {
  const service = await startService(t);
  const none = await postForm(service.app, '/API/EditBucket', {});
  t.strictSame(none.json().Items, [
    'The AccessToken field is required.',
    'The BucketId field is required.',
    'The NewBucketName field is required.',
    'The OpenToRead field is required.',
    'The OpenToUpload field is required.',
  ]);
  const several = await postForm(service.app, '/API/EditBucket', {
    AccessToken: 'x',
    BucketId: 'abc',
    NewBucketName: 'Download',
    OpenToRead: 'maybe',
    OpenToUpload: 'true',
  });
  t.strictSame(several.json(), {
    Code: -10,
    Message: INVALID,
    Items: [
      "The value 'abc' is not valid for BucketId.",
      "The NewBucketName 'Download' is reserved.",
      "The value 'maybe' is not valid for OpenToRead.",
    ],
  });
  const range = await postForm(service.app, '/API/EditBucket', {
    AccessToken: 'x',
    BucketId: 0,
    NewBucketName: 'abc',
    OpenToRead: true,
    OpenToUpload: true,
  });
  t.strictSame(range.json().Items, [
    `The field BucketId must be between 1 and ${MAX_ID}.`,
    'The field NewBucketName must be 5 to 25 characters long.',
  ]);
});

t.test('simultaneous renames to one name on two instances: exactly one wins', async (t) => {
  const one = await startService(t);
  const two = await startService(t, { database: await (await testDatabase()).openAnother() });
  const { token } = await one.newApp();
  const ids = await Promise.all(Array.from({ length: 6 }, () => createBucket(one, token)));
  const target = uniqueBucketName('Target');
  const bodies = await Promise.all(
    ids.map(async (id, i) =>
      (
        await postForm((i % 2 === 0 ? one : two).app, '/API/EditBucket', {
          AccessToken: token,
          BucketId: id,
          NewBucketName: target,
          OpenToRead: true,
          OpenToUpload: true,
        })
      ).json(),
    ),
  );
  t.equal(bodies.filter((body) => body.Code === 0).length, 1);
  t.strictSame(bodies.filter((body) => body.Code !== 0), Array(5).fill(NAME_TAKEN));
});
