import t from 'tap';
import { hashSecret } from '../src/services/secret-hashing.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { download } from './helpers/download.js';
import { waitFor } from './helpers/process.js';
import { postForm, startService, type TestService } from './helpers/service.js';
import { storeFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

const NOT_FOUND = { Code: -1, Message: 'Could not find that file.' };

async function privateFile(service: TestService, name = 'private.pdf') {
  const owner = await service.newApp();
  const bucketName = uniqueBucketName('priv');
  const bucketId = await createBucket(service, owner.token, { name: bucketName, openToRead: false });
  const file = await storeFile(service, bucketId, { name });
  return { ...file, owner, bucketId, bucketName, internetPath: `/${bucketName}/${name}` };
}

async function generate(service: TestService, query: Record<string, string | number>) {
  const response = await service.app.inject({ url: `/Secret/Generate?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))}` });
  return response.json();
}

const fromSecret = (value: string) => `/Download/FromSecret?sec=${encodeURIComponent(value)}`;

t.test('Generate validates its input and refuses files that are not the app’s own', async (t) => {
  const service = await startService(t);
  const file = await privateFile(service);
  const other = await service.newApp();
  const expired = await storeFile(service, file.bucketId, { expired: true });

  t.same(await generate(service, {}), {
    Code: -10,
    Message: 'Your input contains several errors!',
    Items: ['The AccessToken field is required.', 'The Id field is required.'],
  });
  t.same((await generate(service, { AccessToken: file.owner.token, Id: 'abc', MaxUseTimes: 0 })).Items, [
    "The value 'abc' is not valid for Id.",
    'The field MaxUseTimes must be between 1 and 1000000.',
  ]);
  t.same((await generate(service, { AccessToken: file.owner.token, Id: file.fileKey, MaxUseTimes: 1000001 })).Items, [
    'The field MaxUseTimes must be between 1 and 1000000.',
  ]);
  t.same(await generate(service, { AccessToken: 'nope', Id: file.fileKey }), { Code: -1, Message: 'Invalid or expired AccessToken.' });
  t.same(await generate(service, { AccessToken: file.owner.token, Id: 999999999 }), NOT_FOUND);
  t.same(await generate(service, { AccessToken: file.owner.token, Id: expired.fileKey }), NOT_FOUND);
  t.same(await generate(service, { AccessToken: other.token, Id: file.fileKey }), { Code: -1, Message: 'This is not your bucket!' });
  t.equal(await service.app.db.selectFrom('download_secrets').select('secret_hash').execute().then((rows) => rows.length), 0, 'nothing stored');

  // Names and path in any case, as everywhere in the protocol.
  const body = (await service.app.inject({ url: `/secret/generate?accesstoken=${file.owner.token}&id=${file.fileKey}&maxusetimes=5` })).json();
  t.equal(body.Code, 0);
  t.equal(body.Message, 'Successfully generated a download secret.');
  t.match(body.Value, /^[A-Za-z0-9_-]{43}$/);
  const rows = await service.app.db.selectFrom('download_secrets').selectAll().execute();
  t.equal(rows.length, 1);
  t.equal(rows[0]!.secret_hash, hashSecret(body.Value), 'only the hash is stored');
  t.equal(rows[0]!.uses_left, 5);
  t.equal(rows[0]!.app_id, file.owner.appId);
  t.notOk(JSON.stringify(rows).includes(body.Value));
  t.notOk(service.logs.some((line) => line.includes(body.Value)), 'the secret never reaches the logs');
});

t.test('a private file is served only through its secret, like any download', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketName = uniqueBucketName('priv');
  const bucketId = await createBucket(service, owner.token, { name: bucketName, openToRead: false });
  const uploaded = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'report.pdf', size: 3 * 1024 * 1024 });
  const fileKey = uploaded.body.FileKey as number;

  t.same((await download(baseUrl, `/${bucketName}/report.pdf`)).json, NOT_FOUND, 'not at its InternetPath');
  t.same((await download(baseUrl, `/Download/FromKey/${fileKey}`)).json, NOT_FOUND, 'not by its key');

  const { Value } = await generate(service, { AccessToken: owner.token, Id: fileKey, MaxUseTimes: 2 });
  const response = await download(baseUrl, `${fromSecret(Value)}&download=1`);
  t.equal(response.status, 200);
  t.equal(response.sha256, uploaded.sha256, 'the bytes of the upload');
  t.equal(response.headers['content-type'], 'application/pdf');
  t.equal(response.headers['content-disposition'], 'attachment; filename=report.pdf');
  t.equal(response.headers['x-content-type-options'], 'nosniff');
  t.equal(response.headers['content-security-policy'], 'sandbox');
  t.equal(response.headers['cache-control'], 'private, no-store', 'no shared cache keeps what a secret unlocked');
  t.equal(response.headers['accept-ranges'], 'bytes');
  t.ok(response.headers.etag);

  // Counted once the service has handed the last byte to the socket, which this client, in the same
  // process, may have read before the service's callback ran.
  const downloadTimes = async () => (await service.app.inject({ url: `/API/ViewOneFile?FileKey=${fileKey}` })).json().File.DownloadTimes as number;
  await waitFor('the secret download to be counted', async () => (await downloadTimes()) > 0, 5_000, 20);
  t.equal(await downloadTimes(), 1, 'secret downloads are counted');
  t.notOk(service.logs.some((line) => line.includes(Value)), 'the secret is redacted from logged URLs');
});

t.test('MaxUseTimes 3 serves three GETs, then 404; HEAD uses nothing', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const file = await privateFile(service, 'three.txt');
  const { Value } = await generate(service, { AccessToken: file.owner.token, Id: file.fileKey, MaxUseTimes: 3 });
  const path = fromSecret(Value);

  for (let i = 0; i < 3; i++) {
    const head = await download(baseUrl, path, { method: 'HEAD' });
    t.equal(head.status, 200, 'HEAD answers while uses are left');
    t.equal(head.headers['content-length'], '41');
  }
  for (let i = 1; i <= 2; i++) t.equal((await download(baseUrl, path)).status, 200, `GET ${i}`);
  t.equal((await download(baseUrl, `/download/fromsecret?SEC=${encodeURIComponent(Value)}`)).status, 200, 'GET 3: path and name in any case');
  const used = await download(baseUrl, path);
  t.equal(used.status, 404);
  t.same(used.json, NOT_FOUND);
  t.equal((await download(baseUrl, path, { method: 'HEAD' })).status, 404);
  const row = await service.app.db.selectFrom('download_secrets').select('uses_left').where('secret_hash', '=', hashSecret(Value)).executeTakeFirstOrThrow();
  t.equal(row.uses_left, 0, 'never below zero');
});

t.test('a range request takes a use like any GET', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const file = await privateFile(service, 'ranged.txt');
  const content = file.content;
  const { Value } = await generate(service, { AccessToken: file.owner.token, Id: file.fileKey });
  const partial = await download(baseUrl, fromSecret(Value), { headers: { range: 'bytes=5-9' } });
  t.equal(partial.status, 206);
  t.same(partial.body, content.subarray(5, 10));
  t.equal((await download(baseUrl, fromSecret(Value))).status, 404, 'the one use is gone');
});

t.test('two racing downloads of a one-use secret: exactly one gets the file', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const file = await privateFile(service, 'race.txt');
  for (let round = 0; round < 10; round++) {
    const { Value } = await generate(service, { AccessToken: file.owner.token, Id: file.fileKey });
    const results = await Promise.all([download(baseUrl, fromSecret(Value)), download(baseUrl, fromSecret(Value))]);
    t.same(results.map((r) => r.status).sort(), [200, 404], `round ${round}`);
    t.equal(results.find((r) => r.status === 200)?.body.length, 41);
  }
});

t.test('unknown, missing, deleted-file and expired-file secrets are 404', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const file = await privateFile(service, 'deleted.txt');
  const expiring = await storeFile(service, file.bucketId, { name: 'expiring.txt' });
  const forDeleted = (await generate(service, { AccessToken: file.owner.token, Id: file.fileKey, MaxUseTimes: 10 })).Value;
  const forExpired = (await generate(service, { AccessToken: file.owner.token, Id: expiring.fileKey, MaxUseTimes: 10 })).Value;
  t.equal((await download(baseUrl, fromSecret(forDeleted))).status, 200);

  t.equal((await postForm(service.app, '/API/DeleteFile', { AccessToken: file.owner.token, FileKey: file.fileKey })).json().Code, 0);
  await service.app.db
    .updateTable('files')
    .set({ upload_time: new Date(Date.now() - 2 * 86_400_000), expires_at: new Date(Date.now() - 86_400_000) })
    .where('file_key', '=', expiring.fileKey)
    .execute();

  for (const path of [
    fromSecret(forDeleted),
    fromSecret(forExpired),
    fromSecret('A'.repeat(43)),
    fromSecret('x'.repeat(5000)),
    '/Download/FromSecret',
    '/Download/FromSecret?sec=',
  ]) {
    for (const method of ['GET', 'HEAD'] as const) {
      const response = await download(baseUrl, path, { method });
      t.equal(response.status, 404, `${method} ${path.slice(0, 60)}`);
      if (method === 'GET') t.same(response.json, NOT_FOUND);
    }
  }
  const left = await service.app.db.selectFrom('download_secrets').select('uses_left').where('secret_hash', '=', hashSecret(forExpired)).executeTakeFirstOrThrow();
  t.equal(left.uses_left, 10, 'a secret of an expired file loses no use');
});
