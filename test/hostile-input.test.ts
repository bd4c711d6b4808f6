import { createHash } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import t from 'tap';
import { createApp } from '../src/services/apps.js';
import { issueToken } from '../src/services/tokens.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { rawRequest, runCases, type Answer, type HostileCase } from './helpers/hostile.js';
import { postForm, startService } from './helpers/service.js';
import { upload } from './helpers/upload.js';

/**
 * The hostile-input battery: each case is a request no honest client sends, with the one safe
 * answer it must get. Every case also checks that nothing changed and the process lives on.
 */

const BAD_TOKEN = { status: 200, Code: -1, Message: 'Invalid or expired AccessToken.' } as const;
const MiB = 1024 * 1024;

t.test('the battery', async (t) => {
  const service = await startService(t, { env: { MAX_UPLOAD_BYTES: String(4 * MiB) } });
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const other = await service.newApp();
  const bucketName = uniqueBucketName('hostile');
  const bucketId = await createBucket(service, owner.token, { name: bucketName, openToRead: false });
  const otherBucketId = await createBucket(service, other.token);
  const stored = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'kept.txt', size: 1000 });
  const fileKey = stored.body.FileKey as number;
  // A token of a live app whose lifetime is over.
  const expiring = await createApp(service.app.db);
  const expiredToken = (await issueToken(service.app.db, expiring.appId, -60)).accessToken;

  const inject = async (options: InjectOptions): Promise<Answer> => {
    const response = await service.app.inject(options);
    let body: Record<string, unknown> | undefined;
    try {
      body = response.json();
    } catch {
      body = undefined;
    }
    return { status: response.statusCode, body };
  };
  const get = (url: string) => () => inject({ url });
  const post = (url: string, fields: Record<string, string | number | boolean>) => async () => {
    const response = await postForm(service.app, url, fields);
    return { status: response.statusCode, body: response.json() };
  };
  const cases: HostileCase[] = [];
  const add = (name: string, send: () => Promise<Answer>, expect: HostileCase['expect']) => cases.push({ name, send, expect });

  // Names: bucket names that are traversal, reserved, odd or too long.
  const chars = "The field BucketName may contain only letters, digits, '.', '_' and '-', and must start with a letter or digit.";
  const length = 'The field BucketName must be 5 to 25 characters long.';
  const badNames: Array<[string, string]> = [
    ['../../etc', chars], ['..%2F..%2Fetc', chars], ['a/b/c/d', chars], ['abc\\def', chars], ['%2e%2e%2fxyz', chars],
    ['.hidden-name', chars], ['-dash-first', chars], ['_underscore', chars], [' leading-space', chars], ['tab\tname', chars],
    ['nul\u0000name', chars], ['emoji😀name', chars], ['ümlaut-name', chars], ['ｆｕｌｌｗｉｄｔｈ', chars], ['\u202Ertl-name', chars],
    ['name;drop table', chars], ["quote'name", chars], ['<script>x', chars], ['a'.repeat(26), length], ['abcd', length],
    ['Download', "The BucketName 'Download' is reserved."], ['ADMIN', "The BucketName 'ADMIN' is reserved."],
    ['metrics', "The BucketName 'metrics' is reserved."], ['HEALTH', "The BucketName 'HEALTH' is reserved."],
    ['favicon.ico', "The BucketName 'favicon.ico' is reserved."], ['robots.txt', "The BucketName 'robots.txt' is reserved."],
  ];
  for (const [name, item] of badNames) {
    add(`bucket name ${JSON.stringify(name)}`, post('/API/CreateBucket', { AccessToken: owner.token, BucketName: name, OpenToRead: true, OpenToUpload: true }), {
      status: 200,
      Code: -10,
      Items: [item],
    });
  }
  add('rename to a reserved name', post('/API/EditBucket', { AccessToken: owner.token, BucketId: bucketId, NewBucketName: 'secret', OpenToRead: true, OpenToUpload: true }), {
    status: 200,
    Code: -10,
    Items: ["The NewBucketName 'secret' is reserved."],
  });
  const otherName = (await service.app.db.selectFrom('buckets').select('name').where('bucket_id', '=', otherBucketId).executeTakeFirstOrThrow()).name;
  add('rename to another app’s name in another case', post('/API/EditBucket', { AccessToken: owner.token, BucketId: bucketId, NewBucketName: otherName.toUpperCase(), OpenToRead: true, OpenToUpload: true }), {
    status: 200,
    Code: -1,
    Message: 'There is one bucket already called that name!',
  });

  // Identifiers: negative, huge, fractional, exotic digits, lists.
  const badIds: Array<[string, string]> = [
    ['-1', 'The field BucketId must be between 1 and 9007199254740991.'], ['0', 'The field BucketId must be between 1 and 9007199254740991.'],
    ['9007199254740992', "The value '9007199254740992' is not valid for BucketId."], ['1e3', "The value '1e3' is not valid for BucketId."],
    ['0x10', "The value '0x10' is not valid for BucketId."], ['1.0', "The value '1.0' is not valid for BucketId."],
    ['+1', "The value '+1' is not valid for BucketId."], ['١٢٣', "The value '١٢٣' is not valid for BucketId."],
    ['Infinity', "The value 'Infinity' is not valid for BucketId."], ['NaN', "The value 'NaN' is not valid for BucketId."],
    ['1 2', "The value '1 2' is not valid for BucketId."], ['9'.repeat(400), `The value '${'9'.repeat(40)}…' is not valid for BucketId.`],
  ];
  for (const [value, item] of badIds) {
    add(`ViewBucketDetail BucketId=${value.slice(0, 20)}`, get(`/API/ViewBucketDetail?BucketId=${encodeURIComponent(value)}`), { status: 200, Code: -10, Items: [item] });
    add(`DeleteBucket BucketId=${value.slice(0, 20)}`, post('/API/DeleteBucket', { AccessToken: owner.token, BucketId: value }), { status: 200, Code: -10, Items: [item] });
  }
  add('BucketId given twice', get(`/API/ViewBucketDetail?BucketId=${bucketId}&bucketid=${otherBucketId}`), { status: 200, Code: -10, Items: ['The BucketId field was given more than once.'] });
  add('BucketId as a list', get(`/API/ViewBucketDetail?BucketId=${bucketId}&BucketId=${otherBucketId}`), { status: 200, Code: -10, Items: ['The BucketId field was given more than once.'] });
  add('unknown BucketId', get('/API/ViewBucketDetail?BucketId=9007199254740991'), { status: 200, Code: -1, Message: 'Could not find that bucket.' });
  add('FileKey beyond 2^53', get('/API/ViewOneFile?FileKey=18446744073709551616'), { status: 200, Code: -10, Items: ["The value '18446744073709551616' is not valid for FileKey."] });
  add('10 000 Ids', get(`/API/ViewMultiFiles?Ids=${Array.from({ length: 10_000 }, (_, i) => i + 1).join(',')}`), { status: 200, Code: -10, Items: ['The field Ids may list at most 1000 FileKeys.'] });
  add('Ids with SQL', get(`/API/ViewMultiFiles?Ids=${encodeURIComponent('1); delete from files; --')}`), { status: 200, Code: -10 });
  add('Ids with negative and fractional entries', get('/API/ViewMultiFiles?Ids=-1,2.5'), { status: 200, Code: -10, Items: ["The value '-1' is not a valid FileKey in Ids.", "The value '2.5' is not a valid FileKey in Ids."] });

  // Parameter names and values.
  add('__proto__ and constructor parameters', get(`/API/ViewOneFile?__proto__[x]=1&constructor=1&prototype=1&FileKey=${fileKey}`), { status: 200, Code: 0 });
  add('a 100 kB parameter name', get(`/API/ViewBucketDetail?${'n'.repeat(100_000)}=1&BucketId=${bucketId}`), { status: 200, Code: 0 });
  add('a 2 MB form body', post('/API/CreateBucket', { AccessToken: owner.token, BucketName: 'x'.repeat(2 * MiB), OpenToRead: true, OpenToUpload: true }), { status: 413, Code: -10 });
  add('boolean spelled yes', post('/API/CreateBucket', { AccessToken: owner.token, BucketName: uniqueBucketName('bool'), OpenToRead: 'yes', OpenToUpload: '1' }), {
    status: 200,
    Code: -10,
    Items: ["The value 'yes' is not valid for OpenToRead.", "The value '1' is not valid for OpenToUpload."],
  });
  add('all parameters missing', post('/API/EditBucket', {}), {
    status: 200,
    Code: -10,
    Items: ['The AccessToken field is required.', 'The BucketId field is required.', 'The NewBucketName field is required.', 'The OpenToRead field is required.', 'The OpenToUpload field is required.'],
  });

  // Protocol: wrong content types, malformed bodies, odd methods and paths.
  const json = (url: string, payload: string) => () => inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } });
  add('JSON body missing fields', json('/API/CreateBucket', '{"AccessToken":"x"}'), {
    status: 200,
    Code: -10,
    Items: ['The BucketName field is required.', 'The OpenToRead field is required.', 'The OpenToUpload field is required.'],
  });
  add('malformed JSON', json('/API/CreateBucket', '{"AccessToken":'), { status: 400, Code: -10, Items: ['The JSON body must be one object of the operation’s fields.'] });
  add('a JSON array', json('/API/DeleteFile', '[{"FileKey":1}]'), { status: 400, Code: -10 });
  add('a JSON string', json('/API/DeleteFile', '"FileKey=1"'), { status: 400, Code: -10 });
  add('JSON nested 100,000 deep', json('/API/DeleteFile', `{"FileKey":${'['.repeat(100_000)}${']'.repeat(100_000)}}`), { status: 200, Code: -10 });
  add('JSON __proto__ field', json('/API/DeleteFile', '{"__proto__":{"AccessToken":"x"},"constructor":{"prototype":{"FileKey":1}}}'), {
    status: 200,
    Code: -10,
    Items: ['The AccessToken field is required.', 'The FileKey field is required.'],
  });
  add('text body', () => inject({ method: 'POST', url: '/API/DeleteFile', payload: 'AccessToken=x', headers: { 'content-type': 'text/plain' } }), { status: 415, Code: -10 });
  add('XML body', () => inject({ method: 'POST', url: '/API/DeleteFile', payload: '<x/>', headers: { 'content-type': 'application/xml' } }), { status: 415, Code: -10 });
  add('multipart to a form operation', () => inject({ method: 'POST', url: '/API/DeleteFile', payload: '--b--\r\n', headers: { 'content-type': 'multipart/form-data; boundary=b' } }), { status: 415, Code: -10 });
  add('form body to UploadFile', () => inject({ method: 'POST', url: '/API/UploadFile', payload: 'a=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), { status: 200, Code: -10 });
  add('multipart without boundary', () => inject({ method: 'POST', url: '/API/UploadFile', payload: 'x', headers: { 'content-type': 'multipart/form-data' } }), { status: 200, Code: -10 });
  add('multipart with the wrong boundary', () => inject({ method: 'POST', url: '/API/UploadFile', payload: '--other\r\n\r\nx\r\n--other--\r\n', headers: { 'content-type': 'multipart/form-data; boundary=b' } }), { status: 200, Code: -10 });
  add('an empty multipart body', () => inject({ method: 'POST', url: '/API/UploadFile', payload: '', headers: { 'content-type': 'multipart/form-data; boundary=b' } }), { status: 200, Code: -10 });
  const part = (name: string, value: string, filename?: string) =>
    `--b\r\nContent-Disposition: form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}\r\n\r\n${value}\r\n`;
  const multipart = (body: string, query = '') => () =>
    inject({ method: 'POST', url: `/API/UploadFile${query}`, payload: body, headers: { 'content-type': 'multipart/form-data; boundary=b' } });
  const credentials = `?AccessToken=${owner.token}&BucketId=${bucketId}&AliveDays=1`;
  add('a truncated multipart body', multipart(`${part('AliveDays', '1')}--b\r\nContent-Disposition: form-data; name="File"; filename="t.txt"\r\n\r\nabc`, credentials), {
    status: 200,
    Code: -10,
    Items: ['The multipart body could not be read.'],
  });
  add('10 000 parts', multipart(`${part('x', '1').repeat(10_000)}--b--\r\n`, credentials), { status: 413, Code: -10, Items: ['The form has too many parts.'] });
  add('a 1 MB field', multipart(`${part('AccessToken', 'x'.repeat(MiB))}${part('File', 'abc', 'f.txt')}--b--\r\n`, `?BucketId=${bucketId}&AliveDays=1`), {
    status: 200,
    Code: -10,
    Items: ['The field AccessToken must be a string with a maximum length of 128.'],
  });
  add('duplicate fields around the file', multipart(`${part('AccessToken', owner.token)}${part('File', 'abc', 'dup.txt')}${part('accesstoken', owner.token)}--b--\r\n`, `?BucketId=${bucketId}&AliveDays=1`), {
    status: 200,
    Code: -10,
    Items: ['The AccessToken field was given more than once.'],
  });
  add('a __proto__ field', multipart(`${part('__proto__', 'x')}${part('File', 'abc', 'p.txt')}--b--\r\n`, credentials), { status: 200, Code: -10, Items: ['A form field has a name that is not allowed.'] });
  add('a constructor field', multipart(`${part('constructor', 'x')}${part('File', 'abc', 'c.txt')}--b--\r\n`, credentials), { status: 200, Code: -10, Items: ['A form field has a name that is not allowed.'] });
  add('a file part named __proto__', multipart(`${part('__proto__', 'abc', 'p.txt')}--b--\r\n`, credentials), { status: 200, Code: -10 });
  add('two file parts', multipart(`${part('File', 'abc', 'a.txt')}${part('File', 'def', 'b.txt')}--b--\r\n`, credentials), { status: 200, Code: -10, Items: ['Exactly one file part is allowed.'] });
  add('a file part with an empty name', multipart(`${part('File', 'abc', '')}--b--\r\n`, credentials), { status: 200, Code: -10 });
  add('a file part whose name is a path to nothing', multipart(`${part('File', 'abc', '../')}--b--\r\n`, credentials), { status: 200, Code: -10, Items: ['The file name is empty or not valid.'] });
  add('a file with a declared length far past the limit', () => inject({ method: 'POST', url: `/API/UploadFile${credentials}`, payload: 'x', headers: { 'content-type': 'multipart/form-data; boundary=b', 'content-length': String(100 * MiB) } }), { status: 413, Code: -10 });
  add('AliveDays 0', multipart(`${part('File', 'abc', 'zero.txt')}--b--\r\n`, `?AccessToken=${owner.token}&BucketId=${bucketId}&AliveDays=0`), { status: 200, Code: -10, Items: ['The field AliveDays must be between 1 and 18250.'] });
  add('AliveDays 18251', multipart(`${part('File', 'abc', 'many.txt')}--b--\r\n`, `?AccessToken=${owner.token}&BucketId=${bucketId}&AliveDays=18251`), { status: 200, Code: -10, Items: ['The field AliveDays must be between 1 and 18250.'] });
  add('unknown method on an operation', () => inject({ method: 'PUT', url: '/API/CreateBucket' }), { status: 404, Code: -1 });
  add('DELETE on an operation', () => inject({ method: 'DELETE', url: `/API/DeleteFile?AccessToken=${owner.token}&FileKey=${fileKey}` }), { status: 404, Code: -1 });
  add('an unknown operation', get('/API/DropEverything'), { status: 404, Code: -1 });
  add('a path of 10 000 characters', get(`/API/${'x'.repeat(10_000)}`), { status: 404, Code: -1 });
  add('an encoded NUL in the path', get('/API/ViewOneFile%00?FileKey=1'), { status: 404, Code: -1 });
  add('huge headers', () => rawRequest(baseUrl, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\nConnection: close\r\n\r\n`), { status: 431, Code: -10 });
  add('a garbage request line', () => rawRequest(baseUrl, 'HELLO THERE\r\n\r\n'), { status: 400, Code: -10 });
  add('an invalid header', () => rawRequest(baseUrl, 'GET /health HTTP/1.1\r\nHost: x\r\nBad Header: y\r\nConnection: close\r\n\r\n'), { status: 400, Code: -10 });

  // Download paths: traversal in every spelling, encoded separators, NUL, overlong and fullwidth forms.
  // The private bucket's file is never served, and nothing outside the store is ever opened.
  const NOT_FOUND = { status: 404, Code: -1 } as const;
  const downloadTricks = [
    `/${bucketName}/kept.txt`,
    `/Download/FromKey/${fileKey}`,
    `/${bucketName}/..%2F..%2F..%2Fetc%2Fpasswd`,
    `/${bucketName}/%2e%2e%2f%2e%2e%2fetc%2fpasswd`,
    `/${bucketName}/%252e%252e%252fetc%252fpasswd`,
    `/${bucketName}/..%5C..%5Cwindows%5Cwin.ini`,
    `/${bucketName}/kept.txt%00.png`,
    `/${bucketName}/%C0%AE%C0%AE%C0%AFetc%C0%AFpasswd`,
    `/${bucketName}/%EF%BC%8E%EF%BC%8E%EF%BC%8Fetc%EF%BC%8Fpasswd`,
    `/${bucketName}/${'a'.repeat(3000)}`,
    '/..%2F..%2Fetc/passwd',
    '/%2e%2e/%2e%2e/etc/passwd',
    '//etc/passwd',
    '/Download/FromKey/..%2F1',
    `/Download/FromKey/${fileKey}%00.png`,
    '/Download/FromKey/-1',
    '/Download/FromKey/99999999999999999999',
    '/Download/FromSecret?sec=..%2F..%2Fetc%2Fpasswd',
    '/Download/FromSecret?sec=',
    '/Secret/Generate?AccessToken=forged&Id=1',
  ];
  for (const url of downloadTricks) {
    const expect = url.startsWith('/Secret/') ? BAD_TOKEN : url.includes('%C0%AE') ? { status: 400, Code: -10 } : NOT_FOUND;
    add(`download ${url.slice(0, 60)}`, get(url), expect);
  }
  const manyRanges = `bytes=${Array.from({ length: 500 }, (_, i) => `${i * 2}-${i * 2}`).join(',')}`;
  add('many ranges on a private file', () => inject({ url: `/Download/FromKey/${fileKey}`, headers: { range: manyRanges } }), NOT_FOUND);

  // Auth: forged, truncated, expired and other apps' tokens on every operation that takes one.
  const forged = 'A'.repeat(43);
  const truncated = owner.token.slice(0, 20);
  const withToken = (token: string): Array<[string, () => Promise<Answer>]> => [
    ['DeleteApp', post('/API/DeleteApp', { AccessToken: token, AppId: owner.appId })],
    ['ViewMyBuckets', get(`/API/ViewMyBuckets?AccessToken=${encodeURIComponent(token)}`)],
    ['CreateBucket', post('/API/CreateBucket', { AccessToken: token, BucketName: uniqueBucketName('auth'), OpenToRead: true, OpenToUpload: true })],
    ['EditBucket', post('/API/EditBucket', { AccessToken: token, BucketId: bucketId, NewBucketName: uniqueBucketName('auth'), OpenToRead: true, OpenToUpload: true })],
    ['DeleteBucket', post('/API/DeleteBucket', { AccessToken: token, BucketId: bucketId })],
    ['UploadFile', multipart(`${part('File', 'abc', 'auth.txt')}--b--\r\n`, `?AccessToken=${encodeURIComponent(token)}&BucketId=${bucketId}&AliveDays=1`)],
    ['ViewAllFiles', get(`/API/ViewAllFiles?AccessToken=${encodeURIComponent(token)}&BucketId=${bucketId}`)],
    ['DeleteFile', post('/API/DeleteFile', { AccessToken: token, FileKey: fileKey })],
  ];
  for (const [label, token] of [['forged', forged], ['truncated', truncated], ['expired', expiredToken], ['lower-cased', owner.token.toLowerCase()], ['padded', ` ${owner.token}x`]] as const) {
    for (const [operation, send] of withToken(token)) add(`${label} token on ${operation}`, send, BAD_TOKEN);
  }
  const otherApp: Array<[string, () => Promise<Answer>, HostileCase['expect']]> = [
    ['DeleteApp of another app', post('/API/DeleteApp', { AccessToken: other.token, AppId: owner.appId }), { status: 200, Code: -1, Message: 'You can only delete your own app.' }],
    ['EditBucket of another app', post('/API/EditBucket', { AccessToken: other.token, BucketId: bucketId, NewBucketName: uniqueBucketName('theft'), OpenToRead: true, OpenToUpload: true }), { status: 200, Code: -1, Message: 'This is not your bucket!' }],
    ['DeleteBucket of another app', post('/API/DeleteBucket', { AccessToken: other.token, BucketId: bucketId }), { status: 200, Code: -1, Message: 'This is not your bucket!' }],
    ['UploadFile into another app’s closed bucket', multipart(`${part('File', 'abc', 'theft.txt')}--b--\r\n`, `?AccessToken=${other.token}&BucketId=${bucketId}&AliveDays=1`), { status: 200, Code: -1, Message: 'You may not upload into this bucket.' }],
    ['ViewAllFiles of another app’s private bucket', get(`/API/ViewAllFiles?AccessToken=${other.token}&BucketId=${bucketId}`), { status: 200, Code: -1, Message: 'This is not your bucket!' }],
    ['DeleteFile of another app', post('/API/DeleteFile', { AccessToken: other.token, FileKey: fileKey }), { status: 200, Code: -1, Message: 'This is not your bucket!' }],
    ['AccessToken with another app’s secret', post('/API/AccessToken', { AppId: owner.appId, AppSecret: other.appSecret }), { status: 200, Code: -1, Message: 'The AppId and AppSecret do not match any app.' }],
  ];
  for (const [name, send, expect] of otherApp) add(name, send, expect);

  t.ok(cases.length >= 100, `${cases.length} distinct cases`);
  await runCases(t, service, cases);

  // Many ranges on a public file: the whole file once, never a response built of 500 parts.
  const publicFile = await upload({ baseUrl, before: { AccessToken: other.token, BucketId: otherBucketId, AliveDays: 1 }, fileName: 'public.txt', size: 5000 });
  const ranged = await service.app.inject({ url: `/Download/FromKey/${publicFile.body.FileKey}`, headers: { range: manyRanges } });
  t.equal(ranged.statusCode, 200);
  t.equal(ranged.rawPayload.length, 5000);
  t.equal(createHash('sha256').update(ranged.rawPayload).digest('hex'), publicFile.sha256);

  // The stored file is untouched by all of it.
  const row = await service.app.db.selectFrom('files').select('sha256').where('file_key', '=', fileKey).executeTakeFirst();
  t.equal(row?.sha256, stored.sha256);
});
