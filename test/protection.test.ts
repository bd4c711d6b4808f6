import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { createBucket } from './helpers/buckets.js';
import { startService } from './helpers/service.js';
import { storeFile } from './helpers/stored-files.js';

t.test('a global limit per client address answers 429 with the envelope and Retry-After', async (t) => {
  const service = await startService(t, { env: { RATE_LIMIT_PER_MINUTE: '3' } });
  for (let i = 0; i < 3; i++) t.equal((await service.app.inject({ url: '/API/ViewBucketDetail?BucketId=1' })).statusCode, 200);
  const limited = await service.app.inject({ url: '/' });
  t.equal(limited.statusCode, 429);
  t.match(limited.json(), { Code: -1, Message: /^Too many requests; try again in \d+ seconds\.$/ });
  t.match(limited.headers['retry-after'], /^\d+$/);
  t.equal(limited.headers['content-type'], 'application/json; charset=utf-8');

  for (const url of ['/health', '/ready', '/metrics']) {
    for (let i = 0; i < 5; i++) t.equal((await service.app.inject({ url })).statusCode, 200, `${url} is never limited`);
  }
  const fromElsewhere = await service.app.inject({ url: '/', remoteAddress: '192.0.2.7' });
  t.equal(fromElsewhere.statusCode, 200, 'the limit is per client address');
});

t.test('RATE_LIMIT_PER_MINUTE=0 turns the global limit off', async (t) => {
  const service = await startService(t, { env: { RATE_LIMIT_PER_MINUTE: '0' } });
  for (let i = 0; i < 50; i++) {
    const response = await service.app.inject({ url: '/' });
    if (response.statusCode !== 200) return t.fail(`request ${i} answered ${response.statusCode}`);
  }
  t.equal((await service.app.inject({ url: '/' })).headers['x-ratelimit-limit'], undefined);
});

t.test('security headers on JSON answers; a route’s own Content-Security-Policy wins', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const picture = await storeFile(service, await createBucket(service, owner.token), { name: 'pic.png' });

  for (const url of ['/', '/API/ViewBucketDetail?BucketId=abc', '/no/such/route']) {
    const response = await service.app.inject({ url });
    t.equal(response.headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'", url);
    t.equal(response.headers['x-content-type-options'], 'nosniff');
    t.equal(response.headers['cross-origin-resource-policy'], 'cross-origin');
    t.equal(response.headers['x-frame-options'], undefined);
    t.equal(response.headers['referrer-policy'], 'no-referrer');
  }
  const download = await service.app.inject({ url: `/Download/FromKey/${picture.fileKey}` });
  t.equal(download.statusCode, 200);
  t.equal(download.headers['content-security-policy'], 'sandbox');
  t.equal(download.headers['cross-origin-resource-policy'], 'cross-origin', 'embeddable by other sites');
  t.equal(download.body, picture.content.toString());
});

t.test('under pressure, requests get 503 with the envelope; the service endpoints still answer', async (t) => {
  // Any heap is above one byte: the instance is under pressure from its first sample (each second).
  const service = await startService(t, { env: { MAX_HEAP_USED_BYTES: '1' } });
  let shed = await service.app.inject({ url: '/' });
  for (let i = 0; i < 40 && shed.statusCode !== 503; i++) {
    await sleep(100);
    shed = await service.app.inject({ url: '/' });
  }
  t.equal(shed.statusCode, 503);
  t.same(shed.json(), { Code: -1, Message: 'The service is overloaded right now; try again shortly.' });
  t.equal(shed.headers['retry-after'], '10');
  t.equal((await service.app.inject({ url: '/health' })).statusCode, 200);
  t.equal((await service.app.inject({ url: '/ready' })).statusCode, 200);
  const metrics = await service.app.inject({ url: '/metrics' });
  t.equal(metrics.statusCode, 200);
  t.match(metrics.body, /^filestore_under_pressure 1$/m);
  t.notOk(service.logs.some((line) => line.includes('FST_UNDER_PRESSURE')), 'shed requests are not logged one by one');
});
