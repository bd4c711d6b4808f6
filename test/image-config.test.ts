import { availableParallelism } from 'node:os';
import t from 'tap';
import { ConfigError, loadConfig } from '../src/config.js';

t.test('image settings: defaults', async (t) => {
  const { images } = loadConfig({});
  t.same(images, {
    enabled: true,
    maxInputPixels: 50_000_000,
    maxInputBytes: 128 * 1024 ** 2,
    cacheBytes: 1024 ** 3,
    concurrency: 2,
    queueLength: 32,
    threadsPerRender: Math.max(1, Math.floor(availableParallelism() / 2)),
  });
  t.ok(Object.isFrozen(images));
});

t.test('image settings: values are read', async (t) => {
  const { images } = loadConfig({
    IMAGE_TRANSFORMATIONS: 'OFF',
    IMAGE_MAX_INPUT_PIXELS: '1000000',
    IMAGE_MAX_INPUT_BYTES: '1048576',
    IMAGE_CACHE_BYTES: '0',
    IMAGE_CONCURRENCY: '6',
    IMAGE_QUEUE_LENGTH: '0',
    UV_THREADPOOL_SIZE: '8',
  });
  t.match(images, { enabled: false, maxInputPixels: 1_000_000, maxInputBytes: 1_048_576, cacheBytes: 0, concurrency: 6, queueLength: 0 });
  t.equal(loadConfig({ IMAGE_TRANSFORMATIONS: 'on' }).images.enabled, true);
  t.equal(loadConfig({ IMAGE_CONCURRENCY: '8', IMAGE_TRANSFORMATIONS: 'off' }).images.concurrency, 8, 'off: the pool is not checked');
  t.equal(loadConfig({}).images.concurrency, 2, "by default, libuv's 4 threads less the 2 kept for the disk");
  t.equal(loadConfig({ UV_THREADPOOL_SIZE: '6' }).images.concurrency, 4, 'a larger pool, more renders at once');
  t.equal(loadConfig({ UV_THREADPOOL_SIZE: '3' }).images.concurrency, 1, 'the smallest pool that renders at all');
});

t.test('a bad image setting stops start-up naming the variable', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ IMAGE_TRANSFORMATIONS: 'maybe' }, /^IMAGE_TRANSFORMATIONS must be on or off, got "maybe"/],
    [{ IMAGE_MAX_INPUT_PIXELS: '0' }, /^IMAGE_MAX_INPUT_PIXELS must be between 1 and/],
    [{ IMAGE_MAX_INPUT_PIXELS: '50MP' }, /^IMAGE_MAX_INPUT_PIXELS must be a whole number/],
    [{ IMAGE_MAX_INPUT_BYTES: '-1' }, /^IMAGE_MAX_INPUT_BYTES must be a whole number/],
    [{ IMAGE_CACHE_BYTES: '1GiB' }, /^IMAGE_CACHE_BYTES must be a whole number/],
    [{ IMAGE_CONCURRENCY: '0' }, /^IMAGE_CONCURRENCY must be between 1 and 256/],
    [{ IMAGE_QUEUE_LENGTH: 'short' }, /^IMAGE_QUEUE_LENGTH must be a whole number/],
    [{ UV_THREADPOOL_SIZE: '2000' }, /^UV_THREADPOOL_SIZE must be between 1 and 1024/],
    [{ IMAGE_CONCURRENCY: '3' }, /^IMAGE_CONCURRENCY=3 needs UV_THREADPOOL_SIZE of at least 5, .* it is 4\./],
    [{ IMAGE_CONCURRENCY: '8', UV_THREADPOOL_SIZE: '9' }, /^IMAGE_CONCURRENCY=8 needs UV_THREADPOOL_SIZE of at least 10/],
  ];
  for (const [env, message] of cases) t.throws(() => loadConfig(env), { name: ConfigError.name, message }, JSON.stringify(env));
});
