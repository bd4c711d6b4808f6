import http from 'node:http';
import t from 'tap';
import { loadConfig } from '../src/config.js';
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS } from '../src/http/cors.js';
import { startService } from './helpers/service.js';

const APP_ORIGIN = 'https://app.example.com';
const DEV_ORIGIN = 'http://localhost:5173';
const OTHER_ORIGIN = 'https://evil.example.net';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request over a real socket, with exactly the headers a browser would send. */
function send(baseUrl: string, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${baseUrl}${path}`, { method, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

const preflight = (baseUrl: string, path: string, origin: string, method: string, requestHeaders: string) =>
  send(baseUrl, 'OPTIONS', path, { origin, 'access-control-request-method': method, 'access-control-request-headers': requestHeaders });

const corsHeaders = (answer: Answer) => Object.keys(answer.headers).filter((name) => name.startsWith('access-control-'));

t.test('CORS_ORIGINS is * or a list of origins; anything else stops start-up naming it', async (t) => {
  t.same(loadConfig({}).corsOrigins, [], 'none by default');
  t.equal(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins, '*');
  t.same(loadConfig({ CORS_ORIGINS: ` ${APP_ORIGIN}/ , ${DEV_ORIGIN}` }).corsOrigins, [APP_ORIGIN, DEV_ORIGIN]);
  for (const bad of ['app.example.com', 'https://app.example.com/path', 'ftp://app.example.com', 'https://a.example.com,*', 'https://a.example.com,,']) {
    t.throws(() => loadConfig({ CORS_ORIGINS: bad }), { name: 'ConfigError', message: /^CORS_ORIGINS must be/ }, bad);
  }
});

t.test('a browser app on an allowed origin gets its preflight and reads the answers', async (t) => {
  const service = await startService(t, { env: { CORS_ORIGINS: `${APP_ORIGIN},${DEV_ORIGIN}` } });
  const { token } = await service.newApp();
  const baseUrl = await service.listen();

  const bucketPreflight = await preflight(baseUrl, '/API/CreateBucket', APP_ORIGIN, 'POST', 'authorization,content-type');
  t.equal(bucketPreflight.status, 204);
  t.equal(bucketPreflight.headers['access-control-allow-origin'], APP_ORIGIN);
  t.equal(bucketPreflight.headers['access-control-allow-methods'], 'GET, HEAD, POST, PATCH, DELETE, OPTIONS');
  t.equal(bucketPreflight.headers['access-control-allow-headers'], CORS_ALLOWED_HEADERS.join(', '));
  t.equal(bucketPreflight.headers['access-control-max-age'], '600');
  t.match(bucketPreflight.headers.vary, /Origin/);
  t.equal(bucketPreflight.headers['access-control-allow-credentials'], undefined, 'no credentials: tokens travel in a header');
  t.equal(bucketPreflight.body, '');

  // A tus client's preflight for a PATCH of a resumable upload.
  const tusPreflight = await preflight(baseUrl, '/API/ResumableUpload/0123456789abcdef', DEV_ORIGIN, 'PATCH', 'tus-resumable,upload-offset,content-type');
  t.equal(tusPreflight.status, 204);
  t.equal(tusPreflight.headers['access-control-allow-origin'], DEV_ORIGIN);
  for (const name of ['Tus-Resumable', 'Upload-Length', 'Upload-Offset', 'Upload-Metadata', 'Authorization']) {
    t.ok(tusPreflight.headers['access-control-allow-headers']!.split(', ').includes(name), `${name} may be sent`);
  }

  const buckets = await send(baseUrl, 'GET', '/API/ViewMyBuckets', { origin: APP_ORIGIN, authorization: `Bearer ${token}` });
  t.equal(buckets.status, 200);
  t.equal(JSON.parse(buckets.body).Code, 0);
  t.equal(buckets.headers['access-control-allow-origin'], APP_ORIGIN);
  const exposed = buckets.headers['access-control-expose-headers']!;
  t.equal(exposed, CORS_EXPOSED_HEADERS.join(', '));
  for (const name of ['Upload-Offset', 'Location', 'Upload-Expires', 'Upload-File-Key', 'Upload-File-Path']) {
    t.ok(exposed.split(', ').includes(name), `${name} is exposed, as the contract lists`);
  }

  const refused = await send(baseUrl, 'GET', '/API/ViewMyBuckets', { origin: APP_ORIGIN, authorization: 'Bearer wrong' });
  t.same(JSON.parse(refused.body), { Code: -1, Message: 'Invalid or expired AccessToken.' });
  t.equal(refused.headers['access-control-allow-origin'], APP_ORIGIN, 'refusals are readable too');
  const notPreflight = await send(baseUrl, 'OPTIONS', '/API/ViewMyBuckets', { origin: APP_ORIGIN });
  t.equal(notPreflight.status, 404, 'an OPTIONS request that is no preflight goes on to the routes');
  t.same(JSON.parse(notPreflight.body), { Code: -1, Message: 'There is no OPTIONS operation at /API/ViewMyBuckets.' });
  t.equal(notPreflight.headers['access-control-allow-origin'], APP_ORIGIN);
  t.equal(notPreflight.headers['access-control-allow-methods'], undefined, 'and is not answered as one');

  const unknown = await send(baseUrl, 'GET', '/API/NoSuchThing', { origin: APP_ORIGIN });
  t.equal(unknown.status, 404);
  t.equal(unknown.headers['access-control-allow-origin'], APP_ORIGIN, 'so is a 404');
});

t.test('downloads are readable from an allowed origin', async (t) => {
  const service = await startService(t, { env: { CORS_ORIGINS: APP_ORIGIN } });
  const baseUrl = await service.listen();
  const download = await send(baseUrl, 'GET', '/Download/FromKey/999999', { origin: APP_ORIGIN });
  t.equal(download.status, 404);
  t.equal(download.headers['access-control-allow-origin'], APP_ORIGIN);
  const rangePreflight = await preflight(baseUrl, '/some-bucket/file.bin', APP_ORIGIN, 'GET', 'range,if-range');
  t.equal(rangePreflight.status, 204);
  t.equal(rangePreflight.headers['access-control-allow-origin'], APP_ORIGIN);
});

t.test('other origins, and the service endpoints, get no CORS header at all', async (t) => {
  const service = await startService(t, { env: { CORS_ORIGINS: APP_ORIGIN } });
  const { token } = await service.newApp();
  const baseUrl = await service.listen();

  const denied = await preflight(baseUrl, '/API/CreateBucket', OTHER_ORIGIN, 'POST', 'authorization');
  t.equal(denied.status, 404, 'the preflight is not answered');
  t.same(corsHeaders(denied), []);
  t.same(JSON.parse(denied.body), { Code: -1, Message: 'There is no OPTIONS operation at /API/CreateBucket.' });

  const call = await send(baseUrl, 'GET', '/API/ViewMyBuckets', { origin: OTHER_ORIGIN, authorization: `Bearer ${token}` });
  t.equal(call.status, 200);
  t.same(corsHeaders(call), [], 'the browser will not let that page read the answer');

  const sameHostOtherPort = await send(baseUrl, 'GET', '/API/ViewMyBuckets', { origin: 'https://app.example.com:8443' });
  t.same(corsHeaders(sameHostOtherPort), [], 'an origin matches exactly, port included');

  const metrics = await send(baseUrl, 'GET', '/metrics', { origin: APP_ORIGIN });
  t.equal(metrics.status, 200);
  t.same(corsHeaders(metrics), [], '/metrics is not for browser apps');
});

t.test('without CORS_ORIGINS no origin is allowed', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const denied = await preflight(baseUrl, '/API/ViewMyBuckets', APP_ORIGIN, 'GET', 'authorization');
  t.equal(denied.status, 404);
  t.same(corsHeaders(denied), []);
  const call = await send(baseUrl, 'GET', '/API/ViewMyBuckets', { origin: APP_ORIGIN });
  t.same(corsHeaders(call), []);
});

t.test('CORS_ORIGINS=* lets any origin in, and rate-limit refusals stay readable', async (t) => {
  const service = await startService(t, { env: { CORS_ORIGINS: '*', RATE_LIMIT_PER_MINUTE: '1' } });
  const baseUrl = await service.listen();
  const first = await send(baseUrl, 'GET', '/API/ViewMyBuckets', { origin: OTHER_ORIGIN });
  t.equal(first.headers['access-control-allow-origin'], OTHER_ORIGIN);
  const limited = await send(baseUrl, 'GET', '/API/ViewMyBuckets', { origin: OTHER_ORIGIN });
  t.equal(limited.status, 429);
  t.equal(limited.headers['access-control-allow-origin'], OTHER_ORIGIN);
  t.ok(limited.headers['access-control-expose-headers']!.split(', ').includes('Retry-After'), 'the app can read when to retry');
});
