import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { loadConfig } from '../src/config.js';
import { closedPort, dropKeys, eventually, ownRedis, SHARED_REDIS_URL } from './helpers/redis.js';
import { startService, type TestService } from './helpers/service.js';

const LIMIT = 3;

/** A unique key prefix, so runs and tests never count each other's requests. */
function uniquePrefix(t: Test, url: string): string {
  const prefix = `filestore-test:${randomUUID()}:`;
  t.teardown(() => dropKeys(url, prefix));
  return prefix;
}

async function sharedGauge(service: TestService): Promise<number> {
  const body = (await service.app.inject({ url: '/metrics' })).body;
  const line = body.split('\n').find((l) => l.startsWith('filestore_rate_limit_shared '));
  return Number(line?.split(' ')[1]);
}

const welcome = async (service: TestService) => (await service.app.inject({ url: '/' })).statusCode;

function startInstances(t: Test, env: Record<string, string>) {
  return Promise.all([startService(t, { env }), startService(t, { env })]);
}

t.test('REDIS_URL must be a redis URL, and is never echoed', async (t) => {
  t.equal(loadConfig({}).redisUrl, undefined);
  t.equal(loadConfig({}).redisKeyPrefix, 'filestore:rate-limit:');
  t.equal(loadConfig({ REDIS_URL: 'rediss://:pw@cache:6380/2' }).redisUrl, 'rediss://:pw@cache:6380/2');
  t.throws(() => loadConfig({ REDIS_URL: 'http://user:hunter2@cache' }), { name: 'ConfigError', message: 'REDIS_URL must be a redis:// or rediss:// URL.' });
});

t.test('with REDIS_URL, two instances share one count', async (t) => {
  const prefix = uniquePrefix(t, SHARED_REDIS_URL);
  const [a, b] = await startInstances(t, { REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_PER_MINUTE: String(LIMIT), TOKEN_RATE_LIMIT_PER_MINUTE: '2' });
  await eventually(async () => (await sharedGauge(a!)) === 1 && (await sharedGauge(b!)) === 1, 'both instances use Redis');

  t.same([await welcome(a!), await welcome(b!), await welcome(a!)], [200, 200, 200], 'the limit, spread over two instances');
  const limited = await b!.app.inject({ url: '/' });
  t.equal(limited.statusCode, 429, 'the fourth request is over the limit, on the instance that had seen one');
  t.match(limited.json(), { Code: -1, Message: /^Too many requests; try again in \d+ seconds\.$/ });
  t.ok(Number(limited.headers['retry-after']) >= 1);
  t.equal(await welcome(a!), 429, 'and on the other');

  // The AccessToken limit is shared too, under its own count.
  const token = () => a!.app.inject({ url: '/API/AccessToken?AppId=nobody&AppSecret=wrong-secret-000000' });
  const tokenOnB = () => b!.app.inject({ url: '/API/AccessToken?AppId=nobody&AppSecret=wrong-secret-000000' });
  t.same([(await token()).statusCode, (await tokenOnB()).statusCode, (await token()).statusCode], [200, 200, 429]);

  t.equal(await sharedGauge(a!), 1, '/metrics shows the limits are shared');
});

t.test('without REDIS_URL each instance counts alone', async (t) => {
  const [a, b] = await startInstances(t, { RATE_LIMIT_PER_MINUTE: String(LIMIT) });
  const answers = [];
  for (let i = 0; i < LIMIT; i++) answers.push(await welcome(a!), await welcome(b!));
  t.same(answers, Array(2 * LIMIT).fill(200), 'each instance allows the whole limit');
  t.same([await welcome(a!), await welcome(b!)], [429, 429]);
  t.equal(await sharedGauge(a!), 0);
});

t.test('Redis unreachable from the start: the service serves, limited per instance, and /metrics says so', async (t) => {
  const port = await closedPort();
  const service = await startService(t, { env: { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_PER_MINUTE: String(LIMIT) } });
  const { token } = await service.newApp();
  const buckets = await service.app.inject({ url: '/API/ViewMyBuckets', headers: { authorization: `Bearer ${token}` } });
  t.equal(buckets.statusCode, 200);
  t.equal(buckets.json().Code, 0, 'an operation works');
  t.same([await welcome(service), await welcome(service)], [200, 200], 'the limit is still counted…');
  t.equal(await welcome(service), 429, '…in the instance');
  t.equal(await sharedGauge(service), 0);
  t.equal((await service.app.inject({ url: '/ready' })).statusCode, 200, 'Redis is not needed to be ready');
  t.match(service.logs.join('\n'), /Redis unreachable: rate limits are counted per instance/);
});

t.test('Redis stopped mid-run: no failed request, per-instance limits, shared again once it is back', async (t) => {
  const redis = await ownRedis(t);
  const env = { REDIS_URL: redis.url, RATE_LIMIT_PER_MINUTE: String(LIMIT), REDIS_KEY_PREFIX: 'mid-run:' };
  const [a, b] = await startInstances(t, env);
  await eventually(async () => (await sharedGauge(a!)) === 1 && (await sharedGauge(b!)) === 1, 'both instances use Redis');
  t.same([await welcome(a!), await welcome(b!)], [200, 200], 'two of three counted in Redis');

  await redis.stop();
  // Whatever the instances notice first (the lost connection or a failed command), no request fails.
  const during = [];
  for (let i = 0; i < LIMIT; i++) during.push(await welcome(a!));
  t.same(during, Array(LIMIT).fill(200), 'instance A now counts alone, from zero');
  t.equal(await welcome(a!), 429, 'and still enforces the limit');
  t.same([await welcome(b!), await welcome(b!), await welcome(b!), await welcome(b!)], [200, 200, 200, 429], 'so does B');
  await eventually(async () => (await sharedGauge(a!)) === 0 && (await sharedGauge(b!)) === 0, '/metrics shows the fallback');

  await redis.start();
  await eventually(async () => (await sharedGauge(a!)) === 1 && (await sharedGauge(b!)) === 1, 'both reconnect', 90_000);
  t.same([await welcome(b!), await welcome(a!), await welcome(b!), await welcome(a!)], [200, 200, 200, 429], 'one shared count again (the restarted Redis starts empty)');
  t.match(a!.logs.join('\n'), /rate limits are shared through Redis again/);
});

t.test('Redis that stops answering (frozen): requests go on within the command timeout, per instance', async (t) => {
  const redis = await ownRedis(t);
  const service = await startService(t, { env: { REDIS_URL: redis.url, RATE_LIMIT_PER_MINUTE: String(LIMIT), REDIS_KEY_PREFIX: 'frozen:' } });
  await eventually(async () => (await sharedGauge(service)) === 1, 'the instance uses Redis');
  t.equal(await welcome(service), 200, 'one counted in Redis');

  redis.freeze();
  const answers = [];
  for (let i = 0; i < LIMIT + 1; i++) answers.push(await welcome(service));
  t.same(answers, [200, 200, 200, 429], 'the first waits for the timeout, then the instance counts alone');
  t.equal(await sharedGauge(service), 0, '/metrics shows the fallback');
  t.match(service.logs.join('\n'), /"reason":"[^"]+".*Redis unreachable: rate limits are counted per instance/);

  redis.thaw();
  // After the cool-off the instance tries Redis again; its count there went on from one.
  await eventually(async () => (await sharedGauge(service)) === 1, 'Redis is used again');
  t.same([await welcome(service), await welcome(service)], [200, 429], 'the shared count resumed where it was');
  t.match(service.logs.join('\n'), /rate limits are shared through Redis again/);
});
