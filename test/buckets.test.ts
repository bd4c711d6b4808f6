import t from 'tap';
import { MAX_ID } from '../src/http/binding.js';
import { createBucket, RESERVED_BUCKET_NAMES } from '../src/services/buckets.js';
import { postForm, startService, testDatabase, type TestService } from './helpers/service.js';
import { hasBytes, storeFile } from './helpers/stored-files.js';

const INVALID = 'Your input contains several errors!';
const NAME_TAKEN = { Code: -1, Message: 'There is one bucket already called that name!' };
const UNKNOWN = { Code: -1, Message: 'Could not find that bucket.' };
const NOT_YOURS = { Code: -1, Message: 'This is not your bucket!' };
const BAD_TOKEN = { Code: -1, Message: 'Invalid or expired AccessToken.' };
const NAME_CHARACTERS = "may contain only letters, digits, '.', '_' and '-', and must start with a letter or digit.";

/** Bucket names are global, so each test takes its own. */
let counter = 0;
const uniqueName = (prefix = 'bucket') => `${prefix}-${process.pid}-${++counter}`;

async function create(service: TestService, token: string, name: string, openToRead = true, openToUpload = false) {
  const response = await postForm(service.app, '/API/CreateBucket', {
    AccessToken: token,
    BucketName: name,
    OpenToRead: openToRead,
    OpenToUpload: openToUpload,
  });
  return response.json();
}

async function createOk(service: TestService, token: string, name = uniqueName(), openToRead = true, openToUpload = false) {
  const body = await create(service, token, name, openToRead, openToUpload);
  if (body.Code !== 0) throw new Error(`CreateBucket failed: ${JSON.stringify(body)}`);
  return body.BucketId as number;
}

function row(service: TestService, bucketId: number) {
  return service.app.db.selectFrom('buckets').selectAll().where('bucket_id', '=', bucketId).executeTakeFirst();
}

async function countBuckets(service: TestService, appId?: string) {
  let query = service.app.db.selectFrom('buckets').select((eb) => eb.fn.countAll().as('n'));
  if (appId !== undefined) query = query.where('app_id', '=', appId);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

async function detail(service: TestService, bucketId: number) {
  return (await service.app.inject({ url: `/API/ViewBucketDetail?BucketId=${bucketId}` })).json();
}

t.test('CreateBucket creates a bucket owned by the token’s app', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  const name = uniqueName('Photos');
  const response = await postForm(service.app, '/API/CreateBucket', {
    AccessToken: token,
    BucketName: name,
    OpenToRead: true,
    OpenToUpload: false,
  });
  t.equal(response.statusCode, 200);
  const body = response.json();
  t.same(Object.keys(body).sort(), ['BucketId', 'Code', 'Message']);
  t.equal(body.Code, 0);
  t.equal(body.Message, 'Successfully created your bucket!');
  t.equal(typeof body.BucketId, 'number');
  t.match(await row(service, body.BucketId), { name, open_to_read: true, open_to_upload: false, app_id: appId });

  const view = await detail(service, body.BucketId);
  t.strictSame(view, {
    BucketId: body.BucketId,
    BucketName: name,
    OpenToRead: true,
    OpenToUpload: false,
    BelongingAppId: appId,
    FileCount: 0,
    Message: 'Successfully get your bucket detail!',
    Code: 0,
  });
});

t.test('paths and parameter names in any case, booleans in any case', async (t) => {
  const service = await startService(t);
  const { token } = await service.newApp();
  const name = uniqueName();
  const created = await postForm(service.app, '/api/createbucket', {
    accesstoken: token,
    BUCKETNAME: name,
    openToRead: 'False',
    OPENTOUPLOAD: 'TRUE',
  });
  t.equal(created.json().Code, 0);
  const id = created.json().BucketId;
  t.match(await row(service, id), { name, open_to_read: false, open_to_upload: true });

  for (const url of [
    `/API/ViewBucketDetailTry?BucketId=${id}`,
    `/api/viewbucketdetail?bucketid=${id}`,
    `/Api/VIEWBUCKETDETAILTRY?BUCKETID=${id}`,
  ]) {
    const body = (await service.app.inject({ url })).json();
    t.equal(body.Code, 0, url);
    t.equal(body.BucketId, id, url);
  }

  const edited = await postForm(service.app, '/api/EDITBUCKET', {
    accessToken: token,
    bucketid: id,
    newbucketname: name,
    opentoread: 'True',
    opentoupload: 'false',
  });
  t.equal(edited.json().Code, 0);
  t.match(await row(service, id), { open_to_read: true, open_to_upload: false });

  const mine = (await service.app.inject({ url: `/api/viewmybucketstry?accesstoken=${token}` })).json();
  t.same(mine.Buckets.map((b: { BucketId: number }) => b.BucketId), [id]);

  const deleted = await postForm(service.app, '/api/deletebucket', { ACCESSTOKEN: token, BUCKETID: id });
  t.equal(deleted.json().Code, 0);
  t.equal(await row(service, id), undefined);
});

t.test('CreateBucket validation reports every invalid input together', async (t) => {
  const service = await startService(t);
  const bucketsBefore = await countBuckets(service);
  const none = await postForm(service.app, '/API/CreateBucket', {});
  t.strictSame(none.json(), {
    Code: -10,
    Message: INVALID,
    Items: [
      'The AccessToken field is required.',
      'The BucketName field is required.',
      'The OpenToRead field is required.',
      'The OpenToUpload field is required.',
    ],
  });

  const several = await postForm(service.app, '/API/CreateBucket', {
    AccessToken: 'whatever',
    BucketName: 'no spaces',
    OpenToRead: 'yes',
    OpenToUpload: '1',
  });
  t.strictSame(several.json(), {
    Code: -10,
    Message: INVALID,
    Items: [
      `The field BucketName ${NAME_CHARACTERS}`,
      "The value 'yes' is not valid for OpenToRead.",
      "The value '1' is not valid for OpenToUpload.",
    ],
  });
  t.equal(await countBuckets(service), bucketsBefore, 'nothing was created');
});

t.test('bucket names: 5 to 25 of A-Z a-z 0-9 . _ -, starting with a letter or digit', async (t) => {
  const service = await startService(t);
  const { token } = await service.newApp();
  const tag = `${process.pid % 1000}x${++counter}`;
  const length = `The field BucketName must be 5 to 25 characters long.`;
  const characters = `The field BucketName ${NAME_CHARACTERS}`;
  const refused: Array<[string, string]> = [
    ['abcd', length],
    ['a'.repeat(26), length],
    ['x'.repeat(5000), length],
    ['my bucket', characters],
    [' leading', characters],
    ['.hidden', characters],
    ['_under', characters],
    ['-dash-', characters],
    ['bücket', characters],
    ['a/b/c/d', characters],
    ['a%2Fbc', characters],
    ['tab\there', characters],
    ['emoji😀x', characters],
  ];
  for (const [name, message] of refused) {
    const body = await create(service, token, name);
    t.strictSame(body, { Code: -10, Message: INVALID, Items: [message] }, JSON.stringify(name));
  }

  for (const name of [`a${tag}`.padEnd(5, '0'), `Z.${tag}_-`, `9${tag}`.padEnd(25, 'x'), `0-${tag}.v2`]) {
    const body = await create(service, token, name);
    t.equal(body.Code, 0, `${JSON.stringify(name)} is accepted`);
    t.equal((await detail(service, body.BucketId)).BucketName, name, 'stored as given');
  }
});

t.test('names the service’s own routes use are reserved, in any case', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  t.ok(RESERVED_BUCKET_NAMES.includes('Download') && RESERVED_BUCKET_NAMES.includes('Secret'));
  for (const name of ['Download', 'download', 'DOWNLOAD', 'Secret', 'sEcReT', 'Admin', 'health', 'ready', 'metrics', 'favicon.ico', 'robots.txt', 'ROBOTS.TXT']) {
    const body = await create(service, token, name);
    t.strictSame(body, { Code: -10, Message: INVALID, Items: [`The BucketName '${name}' is reserved.`] }, name);
  }
  // Too short to be a bucket name anyway.
  for (const name of ['API', 'docs']) {
    t.strictSame((await create(service, token, name)).Items, ['The field BucketName must be 5 to 25 characters long.'], name);
  }
  t.equal(await countBuckets(service, appId), 0, 'nothing was created');
});

t.test('a bucket name is unique across all apps, case-insensitively', async (t) => {
  const service = await startService(t);
  const one = await service.newApp();
  const two = await service.newApp();
  const name = uniqueName('Shared');
  const id = await createOk(service, one.token, name);

  t.strictSame(await create(service, one.token, name), NAME_TAKEN, 'same app, same name');
  t.strictSame(await create(service, one.token, name.toUpperCase()), NAME_TAKEN, 'same app, other case');
  t.strictSame(await create(service, two.token, name), NAME_TAKEN, 'another app, same name');
  t.strictSame(await create(service, two.token, name.toLowerCase()), NAME_TAKEN, 'another app, other case');
  const holders = await service.app.db.selectFrom('buckets').select('bucket_id').where('app_id', 'in', [one.appId, two.appId]).execute();
  t.same(holders, [{ bucket_id: id }], 'only the first bucket exists');
});

t.test('operations with a token refuse bad and expired tokens', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  const id = await createOk(service, token);
  const before = await row(service, id);

  const attempts = (accessToken: string) => [
    postForm(service.app, '/API/CreateBucket', { AccessToken: accessToken, BucketName: uniqueName(), OpenToRead: true, OpenToUpload: true }),
    postForm(service.app, '/API/EditBucket', { AccessToken: accessToken, BucketId: id, NewBucketName: uniqueName(), OpenToRead: false, OpenToUpload: true }),
    postForm(service.app, '/API/DeleteBucket', { AccessToken: accessToken, BucketId: id }),
    service.app.inject({ url: `/API/ViewMyBuckets?AccessToken=${encodeURIComponent(accessToken)}` }),
  ];
  for (const response of await Promise.all(attempts('not-a-token'))) {
    t.equal(response.statusCode, 200);
    t.strictSame(response.json(), BAD_TOKEN);
  }
  // The token expires: every operation refuses it at once.
  await service.app.db.updateTable('access_tokens').set({ expires_at: new Date(Date.now() - 1000) }).where('app_id', '=', appId).execute();
  for (const response of await Promise.all(attempts(token))) t.strictSame(response.json(), BAD_TOKEN);

  t.same(await row(service, id), before, 'the bucket is unchanged');
  t.equal(await countBuckets(service, appId), 1, 'nothing was created');
});

t.test('an app deleted while its CreateBucket is under way gets the revoked-token refusal', async (t) => {
  const service = await startService(t);
  await t.rejects(createBucket(service.app.db, 'deleted-app', { name: uniqueName(), openToRead: true, openToUpload: true }), {
    code: -1,
    message: 'Invalid or expired AccessToken.',
  });
});

t.test('EditBucket replaces the name and both flags', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  const id = await createOk(service, token, uniqueName(), true, false);
  const newName = uniqueName('Renamed');
  const response = await postForm(service.app, '/API/EditBucket', {
    AccessToken: token,
    BucketId: id,
    NewBucketName: newName,
    OpenToRead: false,
    OpenToUpload: true,
  });
  t.equal(response.statusCode, 200);
  t.strictSame(response.json(), { Message: 'Successfully edited your bucket!', Code: 0 });
  t.match(await row(service, id), { name: newName, open_to_read: false, open_to_upload: true, app_id: appId });
  t.match(await detail(service, id), { BucketName: newName, OpenToRead: false, OpenToUpload: true });
});

t.test('EditBucket may keep the bucket’s own name, in the same or another case', async (t) => {
  const service = await startService(t);
  const { token } = await service.newApp();
  const name = uniqueName('Keep');
  const id = await createOk(service, token, name, true, true);
  const edit = (newName: string) =>
    postForm(service.app, '/API/EditBucket', { AccessToken: token, BucketId: id, NewBucketName: newName, OpenToRead: false, OpenToUpload: false });

  t.equal((await edit(name)).json().Code, 0, 'same name');
  t.match(await row(service, id), { name, open_to_read: false, open_to_upload: false });
  t.equal((await edit(name.toUpperCase())).json().Code, 0, 'same name, other case');
  t.match(await row(service, id), { name: name.toUpperCase() });
});

t.test('EditBucket refuses a name another bucket holds and changes nothing', async (t) => {
  const service = await startService(t);
  const one = await service.newApp();
  const two = await service.newApp();
  const mine = uniqueName('Mine');
  const sibling = uniqueName('Sibling');
  const theirs = uniqueName('Theirs');
  const id = await createOk(service, one.token, mine, true, false);
  await createOk(service, one.token, sibling);
  await createOk(service, two.token, theirs);
  const before = await row(service, id);

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
  t.same(await row(service, id), before, 'neither name nor flags changed');
});

t.test('EditBucket: only the owner may edit; unknown buckets are refused', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const other = await service.newApp();
  const id = await createOk(service, owner.token, uniqueName(), true, false);
  const taken = uniqueName('Taken');
  await createOk(service, other.token, taken);
  const before = await row(service, id);
  const edit = (token: string, bucketId: number | string, newName: string) =>
    postForm(service.app, '/API/EditBucket', { AccessToken: token, BucketId: bucketId, NewBucketName: newName, OpenToRead: false, OpenToUpload: true });

  t.strictSame((await edit(other.token, id, uniqueName())).json(), NOT_YOURS);
  t.strictSame((await edit(other.token, id, taken)).json(), NOT_YOURS, 'ownership is decided before the name');
  t.same(await row(service, id), before, 'the bucket is unchanged');

  t.strictSame((await edit(owner.token, id + 1000, uniqueName())).json(), UNKNOWN);
  t.strictSame((await edit(owner.token, MAX_ID, uniqueName())).json(), UNKNOWN, 'the largest id is looked up, not a fault');
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

t.test('ViewBucketDetail needs no token and counts only live files', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  const name = uniqueName();
  const id = await createOk(service, token, name, false, true);
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
  const deleted = await createOk(service, token);
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

  const names = [uniqueName('c'), uniqueName('a'), uniqueName('b')];
  const ids: number[] = [];
  for (const [i, name] of names.entries()) {
    ids.push(await createOk(service, token, name, i % 2 === 0, i === 1));
    await createOk(service, other.token);
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

t.test('DeleteBucket removes the bucket, its file rows and their bytes', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  const name = uniqueName();
  const id = await createOk(service, token, name);
  const keep = await createOk(service, token);
  const files = [await storeFile(service, id), await storeFile(service, id, { expired: true })];
  const kept = await storeFile(service, keep);
  await service.app.db
    .insertInto('download_secrets')
    .values({ secret_hash: `hash-${files[0].fileKey}`, file_key: files[0].fileKey, app_id: appId, uses_left: 3 })
    .execute();

  const response = await postForm(service.app, '/API/DeleteBucket', { AccessToken: token, BucketId: id });
  t.equal(response.statusCode, 200);
  t.strictSame(response.json(), { Message: 'Successfully deleted your bucket!', Code: 0 });

  t.equal(await row(service, id), undefined, 'the bucket row is gone');
  t.same(await service.app.db.selectFrom('files').select('file_key').where('bucket_id', '=', id).execute(), [], 'its file rows are gone');
  t.same(await service.app.db.selectFrom('download_secrets').selectAll().execute(), [], 'secrets of its files are gone');
  for (const file of files) t.notOk(await hasBytes(service.app.storage, file.storageKey), 'its bytes are gone');
  t.strictSame(await detail(service, id), UNKNOWN);

  t.ok(await row(service, keep), 'the other bucket stays');
  t.ok(await hasBytes(service.app.storage, kept.storageKey), 'and its bytes');
  t.equal((await detail(service, keep)).FileCount, 1);

  t.strictSame((await postForm(service.app, '/API/DeleteBucket', { AccessToken: token, BucketId: id })).json(), UNKNOWN, 'a second delete');
  t.equal(await createOk(service, token, name.toUpperCase()) > 0, true, 'the name is free again');
});

t.test('DeleteBucket succeeds when a file’s bytes are already gone', async (t) => {
  const service = await startService(t);
  const { token } = await service.newApp();
  const id = await createOk(service, token);
  const file = await storeFile(service, id);
  await service.app.storage.remove([file.storageKey]);
  t.strictSame((await postForm(service.app, '/API/DeleteBucket', { AccessToken: token, BucketId: id })).json().Code, 0);
  t.equal(await row(service, id), undefined);
});

t.test('DeleteBucket: only the owner; unknown buckets are refused; nothing changes', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const other = await service.newApp();
  const id = await createOk(service, owner.token);
  const file = await storeFile(service, id);
  const before = await row(service, id);

  t.strictSame((await postForm(service.app, '/API/DeleteBucket', { AccessToken: other.token, BucketId: id })).json(), NOT_YOURS);
  t.same(await row(service, id), before, 'the bucket stays');
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

t.test('simultaneous creates of one name on two instances: exactly one wins', async (t) => {
  const one = await startService(t);
  const two = await startService(t, { database: await (await testDatabase()).openAnother() });
  const apps = [await one.newApp(), await two.newApp()];
  const name = uniqueName('Race');
  const responses = await Promise.all(
    Array.from({ length: 10 }, (_, i) => {
      const service = i % 2 === 0 ? one : two;
      const casing = i % 3 === 0 ? name.toUpperCase() : name;
      return postForm(service.app, '/API/CreateBucket', { AccessToken: apps[i % 2].token, BucketName: casing, OpenToRead: true, OpenToUpload: true });
    }),
  );
  const bodies = responses.map((response) => response.json());
  t.ok(responses.every((response) => response.statusCode === 200), 'no faults');
  t.equal(bodies.filter((body) => body.Code === 0).length, 1, 'one creator');
  t.strictSame(bodies.filter((body) => body.Code !== 0), Array(9).fill(NAME_TAKEN), 'the rest are told the name is taken');
  t.equal((await countBuckets(one, apps[0].appId)) + (await countBuckets(one, apps[1].appId)), 1, 'one bucket exists');
});

t.test('simultaneous renames to one name on two instances: exactly one wins', async (t) => {
  const one = await startService(t);
  const two = await startService(t, { database: await (await testDatabase()).openAnother() });
  const { token } = await one.newApp();
  const ids = await Promise.all(Array.from({ length: 6 }, () => createOk(one, token)));
  const target = uniqueName('Target');
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
