import t from 'tap';
import { postForm, startService, testDatabase, type TestService } from './helpers/service.js';
import { hasBytes, storeFile } from './helpers/stored-files.js';

const BAD_TOKEN = { Code: -1, Message: 'Invalid or expired AccessToken.' };
const NOT_YOURS = { Code: -1, Message: 'You can only delete your own app.' };

let counter = 0;
const uniqueName = () => `app-bucket-${process.pid}-${++counter}`;

async function createBucket(service: TestService, token: string, name = uniqueName()) {
  const body = (
    await postForm(service.app, '/API/CreateBucket', { AccessToken: token, BucketName: name, OpenToRead: true, OpenToUpload: true })
  ).json();
  if (body.Code !== 0) throw new Error(`CreateBucket failed: ${JSON.stringify(body)}`);
  return body.BucketId as number;
}

/** An app with two buckets, three files (one expired) with their bytes, a download secret and two tokens. */
async function populatedApp(service: TestService) {
  const app = await service.newApp();
  const secondToken = await service.token(app.appId, app.appSecret);
  const names = [uniqueName(), uniqueName()];
  const buckets = [await createBucket(service, app.token, names[0]), await createBucket(service, app.token, names[1])];
  const files = [
    await storeFile(service, buckets[0]),
    await storeFile(service, buckets[0], { expired: true }),
    await storeFile(service, buckets[1]),
  ];
  await service.app.db
    .insertInto('download_secrets')
    .values({ secret_hash: `secret-of-${files[0].storageKey}`, file_key: files[0].fileKey, app_id: app.appId, uses_left: 5 })
    .execute();
  return { ...app, secondToken, names, buckets, files };
}

/** Everything in the database that belongs to the app. */
async function holdings(service: TestService, appId: string) {
  const db = service.app.db;
  const bucketIds = (await db.selectFrom('buckets').select('bucket_id').where('app_id', '=', appId).execute()).map((b) => b.bucket_id);
  return {
    app: await db.selectFrom('apps').select('app_id').where('app_id', '=', appId).execute(),
    tokens: (await db.selectFrom('access_tokens').select('token_hash').where('app_id', '=', appId).execute()).length,
    buckets: bucketIds,
    files:
      bucketIds.length === 0
        ? []
        : (await db.selectFrom('files').select('file_key').where('bucket_id', 'in', bucketIds).orderBy('file_key').execute()).map((f) => f.file_key),
    secrets: (await db.selectFrom('download_secrets').select('secret_hash').where('app_id', '=', appId).execute()).length,
  };
}

t.test('DeleteApp removes the app with its buckets, files, bytes, tokens and secrets', async (t) => {
  const service = await startService(t);
  const doomed = await populatedApp(service);
  const other = await populatedApp(service);
  const otherBefore = await holdings(service, other.appId);

  const response = await postForm(service.app, '/API/DeleteApp', { AccessToken: doomed.token, AppId: doomed.appId });
  t.equal(response.statusCode, 200);
  t.strictSame(response.json(), { Message: 'Successfully deleted that app and all files.', Code: 0 });

  t.strictSame(await holdings(service, doomed.appId), { app: [], tokens: 0, buckets: [], files: [], secrets: 0 });
  const orphanFiles = await service.app.db
    .selectFrom('files')
    .select('file_key')
    .where('file_key', 'in', doomed.files.map((f) => f.fileKey))
    .execute();
  t.same(orphanFiles, [], 'no file row of the app is left');
  for (const file of doomed.files) t.notOk(await hasBytes(service.app.storage, file.storageKey), 'its bytes are gone');

  for (const token of [doomed.token, doomed.secondToken]) {
    const mine = await service.app.inject({ url: `/API/ViewMyBuckets?AccessToken=${token}` });
    t.strictSame(mine.json(), BAD_TOKEN, 'its tokens stop working at once');
  }
  t.strictSame((await postForm(service.app, '/API/DeleteApp', { AccessToken: doomed.token, AppId: doomed.appId })).json(), BAD_TOKEN);

  t.strictSame(await holdings(service, other.appId), otherBefore, 'another app is untouched');
  for (const file of other.files) t.ok(await hasBytes(service.app.storage, file.storageKey), 'and so are its bytes');
  t.equal((await service.app.inject({ url: `/API/ViewMyBuckets?AccessToken=${other.token}` })).json().Buckets.length, 2);

  t.ok(await createBucket(service, other.token, doomed.names[0]), 'the deleted app’s bucket names are free again');
});

t.test('an app may delete only itself', async (t) => {
  const service = await startService(t);
  const one = await populatedApp(service);
  const two = await populatedApp(service);
  const before = [await holdings(service, one.appId), await holdings(service, two.appId)];

  for (const appId of [two.appId, two.appId.toUpperCase(), 'no-such-app', `${one.appId} `]) {
    const response = await postForm(service.app, '/API/DeleteApp', { AccessToken: one.token, AppId: appId });
    t.equal(response.statusCode, 200);
    t.strictSame(response.json(), NOT_YOURS, JSON.stringify(appId));
  }
  t.strictSame([await holdings(service, one.appId), await holdings(service, two.appId)], before, 'nothing changed');
  for (const file of [...one.files, ...two.files]) t.ok(await hasBytes(service.app.storage, file.storageKey));
});

t.test('DeleteApp validation, bad tokens and the path and parameter names in any case', async (t) => {
  const service = await startService(t);
  t.strictSame((await postForm(service.app, '/API/DeleteApp', {})).json(), {
    Code: -10,
    Message: 'Your input contains several errors!',
    Items: ['The AccessToken field is required.', 'The AppId field is required.'],
  });
  t.strictSame((await postForm(service.app, '/API/DeleteApp', { AccessToken: 'x', AppId: 'a'.repeat(65) })).json().Items, [
    'The field AppId must be a string with a maximum length of 64.',
  ]);

  const app = await service.newApp();
  t.strictSame((await postForm(service.app, '/API/DeleteApp', { AccessToken: 'nope', AppId: app.appId })).json(), BAD_TOKEN);
  t.equal((await holdings(service, app.appId)).app.length, 1, 'a bad token deletes nothing');

  const response = await postForm(service.app, '/api/deleteapp', { accesstoken: app.token, APPID: app.appId });
  t.equal(response.json().Code, 0);
  t.equal((await holdings(service, app.appId)).app.length, 0);
});

t.test('buckets created while the app is being deleted on another instance do not survive it', async (t) => {
  const one = await startService(t);
  const two = await startService(t, { database: await (await testDatabase()).openAnother() });
  const doomed = await populatedApp(one);
  const creates = Array.from({ length: 8 }, (_, i) =>
    postForm((i % 2 === 0 ? one : two).app, '/API/CreateBucket', {
      AccessToken: doomed.token,
      BucketName: uniqueName(),
      OpenToRead: true,
      OpenToUpload: false,
    }),
  );
  const deletion = postForm(one.app, '/API/DeleteApp', { AccessToken: doomed.token, AppId: doomed.appId });
  const responses = await Promise.all([...creates, deletion]);
  t.ok(responses.every((response) => response.statusCode === 200), 'no faults');
  for (const response of responses.slice(0, -1)) {
    const body = response.json();
    t.ok(body.Code === 0 || (body.Code === -1 && body.Message === BAD_TOKEN.Message), JSON.stringify(body));
  }
  t.equal(responses.at(-1)?.json().Code, 0);
  t.strictSame(await holdings(one, doomed.appId), { app: [], tokens: 0, buckets: [], files: [], secrets: 0 });
});
