import t from 'tap';
import { createBucket as insertBucket, RESERVED_BUCKET_NAMES } from '../src/services/buckets.js';
import { INVALID, NAME_TAKEN, BAD_TOKEN, NAME_CHARACTERS, create, bucketRow, countBuckets, detail } from './helpers/bucket-calls.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { postForm, startService, testDatabase } from './helpers/service.js';

t.test('CreateBucket creates a bucket owned by the token’s app', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  const name = uniqueBucketName('Photos');
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
  t.match(await bucketRow(service, body.BucketId), { name, open_to_read: true, open_to_upload: false, app_id: appId });

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
  const name = uniqueBucketName();
  const created = await postForm(service.app, '/api/createbucket', {
    accesstoken: token,
    BUCKETNAME: name,
    openToRead: 'False',
    OPENTOUPLOAD: 'TRUE',
  });
  t.equal(created.json().Code, 0);
  const id = created.json().BucketId;
  t.match(await bucketRow(service, id), { name, open_to_read: false, open_to_upload: true });

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
  t.match(await bucketRow(service, id), { open_to_read: true, open_to_upload: false });

  const mine = (await service.app.inject({ url: `/api/viewmybucketstry?accesstoken=${token}` })).json();
  t.same(mine.Buckets.map((b: { BucketId: number }) => b.BucketId), [id]);

  const deleted = await postForm(service.app, '/api/deletebucket', { ACCESSTOKEN: token, BUCKETID: id });
  t.equal(deleted.json().Code, 0);
  t.equal(await bucketRow(service, id), undefined);
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
  const tag = uniqueBucketName('t');
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
  const name = uniqueBucketName('Shared');
  const id = await createBucket(service, one.token, { name });

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
  const id = await createBucket(service, token);
  const before = await bucketRow(service, id);

  const attempts = (accessToken: string) => [
    postForm(service.app, '/API/CreateBucket', { AccessToken: accessToken, BucketName: uniqueBucketName(), OpenToRead: true, OpenToUpload: true }),
    postForm(service.app, '/API/EditBucket', { AccessToken: accessToken, BucketId: id, NewBucketName: uniqueBucketName(), OpenToRead: false, OpenToUpload: true }),
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

  t.same(await bucketRow(service, id), before, 'the bucket is unchanged');
  t.equal(await countBuckets(service, appId), 1, 'nothing was created');
});

t.test('an app deleted while its CreateBucket is under way gets the revoked-token refusal', async (t) => {
  const service = await startService(t);
  await t.rejects(insertBucket(service.app.db, 'deleted-app', { name: uniqueBucketName(), openToRead: true, openToUpload: true }), {
    code: -1,
    message: 'Invalid or expired AccessToken.',
  });
});

t.test('simultaneous creates of one name on two instances: exactly one wins', async (t) => {
  const one = await startService(t);
  const two = await startService(t, { database: await (await testDatabase()).openAnother() });
  const apps = [await one.newApp(), await two.newApp()];
  const name = uniqueBucketName('Race');
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
