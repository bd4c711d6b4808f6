import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { bearerToken } from '../src/http/bearer.js';
import { startService } from './helpers/service.js';

const INVALID_TOKEN = { Code: -1, Message: 'Invalid or expired AccessToken.' };
const TWICE = { Code: -10, Message: 'Your input contains several errors!', Items: ['The AccessToken is given twice with different values.'] };
const REQUIRED = { Code: -10, Message: 'Your input contains several errors!', Items: ['The AccessToken field is required.'] };

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function postWithHeader(app: FastifyInstance, url: string, token: string, fields: Record<string, string | number | boolean>) {
  const payload = new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return app.inject({ method: 'POST', url, payload, headers: { ...bearer(token), 'content-type': 'application/x-www-form-urlencoded' } });
}

const BOUNDARY = 'bearer-test-boundary';
function multipart(fileName: string, content: string, fields: Record<string, string> = {}) {
  const parts = Object.entries(fields).map(([name, value]) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  parts.push(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="File"; filename="${fileName}"\r\nContent-Type: text/plain\r\n\r\n${content}\r\n`);
  return { payload: `${parts.join('')}--${BOUNDARY}--\r\n`, contentType: `multipart/form-data; boundary=${BOUNDARY}` };
}

t.test('the Bearer header is read only from the Bearer scheme', async (t) => {
  t.equal(bearerToken({ authorization: 'Bearer abc' }), 'abc');
  t.equal(bearerToken({ authorization: 'bearer   abc ' }), 'abc', 'scheme in any case, spaces around');
  t.equal(bearerToken({ authorization: 'Basic YTpi' }), undefined, 'another scheme is no token');
  t.equal(bearerToken({ authorization: 'Bearer ' }), undefined, 'an empty token is none');
  t.equal(bearerToken({}), undefined);
});

t.test('bucket operations take the token from the header', async (t) => {
  const service = await startService(t);
  const { app } = service;
  const { token } = await service.newApp();

  const created = await postWithHeader(app, '/API/CreateBucket', token, { BucketName: 'header-bucket', OpenToRead: true, OpenToUpload: false });
  t.equal(created.statusCode, 200);
  t.same(created.json(), { BucketId: created.json().BucketId, Code: 0, Message: 'Successfully created your bucket!' });
  const bucketId = created.json().BucketId as number;

  const mine = await app.inject({ url: '/API/ViewMyBuckets', headers: bearer(token) });
  t.equal(mine.json().Code, 0, mine.body);
  t.same(mine.json().Buckets.map((b: { BucketName: string }) => b.BucketName), ['header-bucket']);

  const detail = await app.inject({ url: `/API/ViewBucketDetailTry?BucketId=${bucketId}`, headers: { authorization: `bearer ${token}` } });
  t.equal(detail.json().Message, 'Successfully get your bucket detail!', 'scheme name in any case, …Try route');

  const edited = await postWithHeader(app, '/API/EditBucket', token, { BucketId: bucketId, NewBucketName: 'header-bucket2', OpenToRead: false, OpenToUpload: true });
  t.same(edited.json(), { Code: 0, Message: 'Successfully edited your bucket!' });

  const bad = await app.inject({ url: '/API/ViewMyBuckets', headers: bearer('not-a-token') });
  t.equal(bad.statusCode, 200);
  t.same(bad.json(), INVALID_TOKEN);

  const deleted = await postWithHeader(app, '/API/DeleteBucket', token, { BucketId: bucketId });
  t.same(deleted.json(), { Code: 0, Message: 'Successfully deleted your bucket!' });
  t.same((await app.inject({ url: '/API/ViewMyBuckets', headers: bearer(token) })).json().Buckets, [], 'the bucket is gone');
});

t.test('the same token in the header and in the query or form is accepted; two different ones are refused', async (t) => {
  const service = await startService(t);
  const { app } = service;
  const first = await service.newApp();
  const other = await service.newApp();

  const same = await app.inject({ url: `/API/ViewMyBuckets?AccessToken=${first.token}`, headers: bearer(first.token) });
  t.equal(same.json().Code, 0, 'same value twice is fine');

  const query = await app.inject({ url: `/API/ViewMyBuckets?accesstoken=${other.token}`, headers: bearer(first.token) });
  t.equal(query.statusCode, 200);
  t.same(query.json(), TWICE, 'header and query differ');

  const form = await postWithHeader(app, '/API/CreateBucket', first.token, { AccessToken: other.token, BucketName: 'twice-bucket', OpenToRead: true, OpenToUpload: true });
  t.same(form.json(), TWICE, 'header and form differ');
  t.same((await app.inject({ url: '/API/ViewMyBuckets', headers: bearer(other.token) })).json().Buckets, [], 'no bucket was created');

  const invalidBoth = await app.inject({ url: '/API/ViewMyBuckets?AccessToken=abc', headers: bearer('abd') });
  t.same(invalidBoth.json(), TWICE, 'the rule holds before any token is looked up');

  const withOthers = await postWithHeader(app, '/API/EditBucket', first.token, { AccessToken: other.token, BucketId: 'x', NewBucketName: 'abcde', OpenToRead: true, OpenToUpload: true });
  t.same(withOthers.json().Items, ['The AccessToken is given twice with different values.', "The value 'x' is not valid for BucketId."], 'reported with the other problems');

  const blankQuery = await app.inject({ url: '/API/ViewMyBuckets?AccessToken=', headers: bearer(first.token) });
  t.equal(blankQuery.json().Code, 0, 'a blank parameter does not count as a second token');

  const basic = await app.inject({ url: '/API/ViewMyBuckets', headers: { authorization: 'Basic YWJjOmRlZg==' } });
  t.same(basic.json(), REQUIRED, 'another scheme gives no token');
  const tooLong = await app.inject({ url: '/API/ViewMyBuckets', headers: bearer('t'.repeat(129)) });
  t.same(tooLong.json().Items, ['The field AccessToken must be a string with a maximum length of 128.'], 'the header token is checked like the parameter');
});

t.test('file operations, uploads and download secrets take the token from the header', async (t) => {
  const service = await startService(t);
  const { app } = service;
  const { token } = await service.newApp();
  const other = await service.newApp();
  const bucketId = (await postWithHeader(app, '/API/CreateBucket', token, { BucketName: 'files-header', OpenToRead: false, OpenToUpload: false })).json().BucketId as number;

  const form = multipart('note.txt', 'hello from a header');
  const uploaded = await app.inject({
    method: 'POST',
    url: `/API/UploadFile?BucketId=${bucketId}&AliveDays=3`,
    payload: form.payload,
    headers: { ...bearer(token), 'content-type': form.contentType },
  });
  t.equal(uploaded.statusCode, 200);
  t.equal(uploaded.json().Code, 0, uploaded.body);
  t.equal(uploaded.json().Message, 'Successfully uploaded your file.');
  const fileKey = uploaded.json().FileKey as number;

  const twiceForm = multipart('twice.txt', 'never stored', { AccessToken: other.token });
  const twice = await app.inject({
    method: 'POST',
    url: `/API/UploadFile?BucketId=${bucketId}&AliveDays=3`,
    payload: twiceForm.payload,
    headers: { ...bearer(token), 'content-type': twiceForm.contentType },
  });
  t.same(twice.json(), TWICE, 'an upload with two different tokens is refused');

  const badUpload = multipart('bad.txt', 'never stored');
  const bad = await app.inject({
    method: 'POST',
    url: `/API/UploadFile?BucketId=${bucketId}&AliveDays=3`,
    payload: badUpload.payload,
    headers: { ...bearer('no-such-token'), 'content-type': badUpload.contentType },
  });
  t.same(bad.json(), INVALID_TOKEN);

  const one = await app.inject({ url: `/API/ViewOneFile?FileKey=${fileKey}`, headers: bearer(token) });
  t.equal(one.json().Message, 'Successfully get that file.');
  const all = await app.inject({ url: `/API/ViewAllFiles?BucketId=${bucketId}`, headers: bearer(token) });
  t.same(all.json().AllFiles.map((f: { RealFileName: string }) => f.RealFileName), ['note.txt'], 'only the accepted upload is there');
  const multi = await app.inject({ url: `/API/ViewMultiFiles?Ids=${fileKey}`, headers: bearer(token) });
  t.equal(multi.json().Code, 0);

  const secret = await app.inject({ url: `/Secret/Generate?Id=${fileKey}`, headers: bearer(token) });
  t.equal(secret.json().Message, 'Successfully generated a download secret.');
  const download = await app.inject({ url: `/Download/FromSecret?sec=${encodeURIComponent(secret.json().Value)}` });
  t.equal(download.body, 'hello from a header', 'the secret made with a header token downloads the bytes');
  const secretTwice = await app.inject({ url: `/Secret/Generate?Id=${fileKey}&AccessToken=${other.token}`, headers: bearer(token) });
  t.same(secretTwice.json(), TWICE);

  const deleted = await postWithHeader(app, '/API/DeleteFile', token, { FileKey: fileKey });
  t.same(deleted.json(), { Code: 0, Message: 'Successfully deleted your file!' });
  t.same((await app.inject({ url: `/API/ViewOneFile?FileKey=${fileKey}`, headers: bearer(token) })).json(), { Code: -1, Message: 'Could not find that file.' });
});

t.test('DeleteApp takes the token from the header', async (t) => {
  const service = await startService(t);
  const { app } = service;
  const mine = await service.newApp();
  const other = await service.newApp();
  const twice = await postWithHeader(app, '/API/DeleteApp', mine.token, { AccessToken: other.token, AppId: mine.appId });
  t.same(twice.json(), TWICE);
  const deleted = await postWithHeader(app, '/API/DeleteApp', mine.token, { AppId: mine.appId });
  t.same(deleted.json(), { Code: 0, Message: 'Successfully deleted that app and all files.' });
  t.same((await app.inject({ url: '/API/ViewMyBuckets', headers: bearer(mine.token) })).json(), INVALID_TOKEN, 'its token stops working');
});

t.test('a token sent in the header never reaches a log line', async (t) => {
  const service = await startService(t, { env: { LOG_LEVEL: 'trace' } });
  const { app } = service;
  app.get('/fault', async () => {
    throw new Error('fault');
  });
  const { token } = await service.newApp();
  await app.inject({ url: '/API/ViewMyBuckets', headers: bearer(token) });
  await app.inject({ url: '/API/ViewMyBuckets?AccessToken=other', headers: bearer(token) });
  await app.inject({ url: '/API/NoSuchOperation', headers: bearer(token) });
  await app.inject({ url: '/fault', headers: bearer(token) });
  // Anything a future change logs with its headers is redacted too.
  app.log.info({ headers: bearer(token) }, 'headers');

  const logs = service.logs.join('\n');
  t.ok(service.logs.length >= 9, 'requests were logged');
  t.notMatch(logs, token, 'no AccessToken in any line');
  t.match(logs, /"authorization":"\[REDACTED\]"/, 'logged headers show the redaction');
});

t.test('the token endpoint ignores the header', async (t) => {
  const service = await startService(t);
  const { appId, appSecret, token } = await service.newApp();
  const response = await service.app.inject({
    method: 'POST',
    url: '/API/AccessToken',
    payload: new URLSearchParams({ AppId: appId, AppSecret: appSecret }).toString(),
    headers: { ...bearer(token), 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(response.json().Code, 0);
  t.not(response.json().AccessToken, token);
});
