import http from 'node:http';
import t from 'tap';
import { CORS_EXPOSED_HEADERS } from '../src/http/cors.js';
import { createBucket } from './helpers/buckets.js';
import { OCTETS } from './helpers/resumable.js';
import { startService } from './helpers/service.js';
import { metadata, tusRequest } from './helpers/tus.js';

/**
 * Resumable uploads bind their parameters as UploadFile does (CONTRACT sections 11 and 13), and
 * the service's CORS rules decide alone which origin may read their answers.
 */

const APP_ORIGIN = 'https://app.example.com';
const OTHER_ORIGIN = 'https://evil.example.net';
const INVALID = 'Your input contains several errors!';

const corsHeaders = (headers: http.IncomingHttpHeaders) => Object.keys(headers).filter((name) => name.startsWith('access-control-')).sort();

t.test('every resumable answer to an allowed origin exposes the tus headers; others get no CORS header', async (t) => {
  const service = await startService(t, { env: { CORS_ORIGINS: APP_ORIGIN } });
  const base = await service.listen();
  const { token } = await service.newApp();
  const bucketId = await createBucket(service, token);
  const endpoint = `${base}/API/ResumableUpload`;
  const creation = (origin: Record<string, string>, name: string) =>
    tusRequest(endpoint, 'POST', { ...origin, Authorization: `Bearer ${token}`, 'Upload-Length': 10, 'Upload-Metadata': metadata({ filename: name, BucketId: String(bucketId), AliveDays: '1' }) });

  const created = await creation({ Origin: APP_ORIGIN }, 'cors.txt');
  t.equal(created.status, 201, created.body);
  const location = created.headers.location!;
  const answers = {
    POST: created,
    HEAD: await tusRequest(location, 'HEAD', { Origin: APP_ORIGIN }),
    'PATCH (part)': await tusRequest(location, 'PATCH', { Origin: APP_ORIGIN, 'Content-Type': OCTETS, 'Upload-Offset': 0 }, Buffer.from('01234')),
    'PATCH (last)': await tusRequest(location, 'PATCH', { Origin: APP_ORIGIN, 'Content-Type': OCTETS, 'Upload-Offset': 5 }, Buffer.from('56789')),
    'PATCH (conflict)': await tusRequest(location, 'PATCH', { Origin: APP_ORIGIN, 'Content-Type': OCTETS, 'Upload-Offset': 3 }, Buffer.from('x')),
  };
  const toDelete = await creation({}, 'deleted.txt');
  const deleted = await tusRequest(toDelete.headers.location!, 'DELETE', { Origin: APP_ORIGIN });
  t.equal(deleted.status, 204);
  for (const [name, answer] of Object.entries({ ...answers, DELETE: deleted })) {
    t.equal(answer.headers['access-control-allow-origin'], APP_ORIGIN, `${name}: the origin may read it`);
    t.equal(answer.headers['access-control-expose-headers'], CORS_EXPOSED_HEADERS.join(', '), `${name}: the service's exposed headers, whole`);
  }
  t.ok(answers['PATCH (last)'].headers['upload-file-key'], 'the last PATCH carries Upload-File-Key, which the page can now read');

  const other = await creation({ Origin: OTHER_ORIGIN }, 'other.txt');
  t.equal(other.status, 201);
  t.same(corsHeaders(other.headers), [], 'another origin gets no CORS header');
  t.same(corsHeaders((await tusRequest(other.headers.location!, 'HEAD', { Origin: OTHER_ORIGIN })).headers), [], 'not on HEAD either');
  const none = await creation({}, 'none.txt');
  t.same(corsHeaders(none.headers), [], 'a request without Origin gets no CORS header');
  t.same(corsHeaders((await tusRequest(`${base}/API/ResumableUpload`, 'OPTIONS', {})).headers), [], 'nor does OPTIONS without Origin');
});

t.test('the creation binds its parameters as UploadFile does', async (t) => {
  const service = await startService(t);
  const base = await service.listen();
  const { token } = await service.newApp();
  const bucketId = await createBucket(service, token);
  const endpoint = `${base}/API/ResumableUpload`;

  const basic = await tusRequest(endpoint, 'POST', {
    Authorization: 'Basic dXNlcjpwYXNz',
    'Upload-Length': 10,
    'Upload-Metadata': metadata({ filename: 'basic.txt', BucketId: String(bucketId), AliveDays: '1', AccessToken: token }),
  });
  t.equal(basic.status, 201, `another Authorization scheme is no token, as for UploadFile: ${basic.body}`);

  const duplicate = await tusRequest(endpoint, 'POST', {
    Authorization: `Bearer ${token}`,
    'Upload-Length': 10,
    'Upload-Metadata': `${metadata({ filename: 'twice.txt', BucketId: String(bucketId), AliveDays: '1' })},${metadata({ bucketid: String(bucketId) })}`,
  });
  t.equal(duplicate.status, 400);
  t.same(JSON.parse(duplicate.body), { Code: -10, Message: INVALID, Items: ['The BucketId field was given more than once.'] });

  const repeated = await tusRequest(endpoint, 'POST', {
    Authorization: `Bearer ${token}`,
    'Upload-Length': 10,
    'Upload-Metadata': `${metadata({ filename: 'twice.txt', BucketId: String(bucketId), AliveDays: '1' })},${metadata({ AliveDays: '2' })}`,
  });
  t.equal(repeated.status, 400);
  t.same(JSON.parse(repeated.body), { Code: -10, Message: INVALID, Items: ['The AliveDays field was given more than once.'] });
  t.same(await service.app.db.selectFrom('resumable_uploads').select('upload_id').where('file_name', '=', 'twice.txt').execute(), [], 'nothing was created');
});
