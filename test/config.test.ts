import path from 'node:path';
import t from 'tap';
import { ConfigError, loadConfig } from '../src/config.js';

t.test('defaults', async (t) => {
  const config = loadConfig({});
  t.equal(config.port, 3000);
  t.equal(config.host, '0.0.0.0');
  t.equal(config.databaseUrl, undefined);
  t.equal(config.dataDir, path.resolve('data'));
  t.equal(config.storageDir, path.resolve('data/files'));
  t.equal(config.maxUploadBytes, 5 * 1024 ** 3);
  t.equal(config.tokenLifetimeSeconds, 1200);
  t.equal(config.sweepIntervalSeconds, 600);
  t.equal(config.trustProxy, false);
  t.equal(config.rateLimitPerMinute, 6000);
  t.equal(config.shutdownGraceSeconds, 25);
  t.equal(config.headersTimeoutSeconds, 30);
  t.equal(config.idleTimeoutSeconds, 120);
  t.equal(config.maxEventLoopDelayMs, 1000);
  t.equal(config.maxHeapUsedBytes, 0);
  t.equal(config.maxRssBytes, 0);
  t.equal(config.perAppConcurrency, 2);
  t.equal(config.perAppQueue, 64);
  t.equal(config.perAppQueueTimeoutSeconds, 30);
  t.same(config.bootstrapApps, []);
  t.ok(Object.isFrozen(config));
});

t.test('values are read and normalised', async (t) => {
  const config = loadConfig({
    PORT: '8080',
    DATA_DIR: '/srv/data',
    PUBLIC_URL: 'https://files.example.com/',
    TRUST_PROXY: 'TRUE',
    BOOTSTRAP_APPS: ' one:secret-number-one-0001 , two:secret:with:colons-0002',
    DATABASE_URL: 'postgresql://u:p@db:5432/files',
  });
  t.equal(config.port, 8080);
  t.equal(config.storageDir, '/srv/data/files');
  t.equal(config.publicUrl, 'https://files.example.com');
  t.equal(config.trustProxy, true);
  t.same(config.bootstrapApps, [
    { appId: 'one', appSecret: 'secret-number-one-0001' },
    { appId: 'two', appSecret: 'secret:with:colons-0002' },
  ]);
});

t.test('a bad value names its variable and never echoes a secret', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: '70000' }, /^PORT must be between 0 and 65535/],
    [{ PORT: '-1' }, /^PORT must be a whole number/],
    [{ MAX_UPLOAD_BYTES: '1.5' }, /^MAX_UPLOAD_BYTES must be a whole number/],
    [{ TOKEN_LIFETIME_SECONDS: '0' }, /^TOKEN_LIFETIME_SECONDS must be between 1/],
    [{ SWEEP_INTERVAL_SECONDS: 'often' }, /^SWEEP_INTERVAL_SECONDS must be a whole number/],
    [{ TRUST_PROXY: 'maybe' }, /^TRUST_PROXY must be true or false/],
    [{ PUBLIC_URL: 'files.example.com' }, /^PUBLIC_URL must be an absolute http\(s\) URL/],
    [{ PUBLIC_URL: 'ftp://files.example.com' }, /^PUBLIC_URL must be an absolute http\(s\) URL/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of/],
    [{ ADMIN_KEY: 'short' }, /^ADMIN_KEY must be at least 16 characters/],
    [{ BOOTSTRAP_APPS: 'no-secret-here' }, /^BOOTSTRAP_APPS entry 1 must be appId:appSecret/],
    [{ BOOTSTRAP_APPS: 'ok:long-enough-secret-1,bad id:long-enough-secret-2' }, /^BOOTSTRAP_APPS entry 2 must be/],
    [{ DATABASE_URL: 'mysql://root:hunter2@db/x' }, /^DATABASE_URL must be a postgres/],
    [{ RATE_LIMIT_PER_MINUTE: '-5' }, /^RATE_LIMIT_PER_MINUTE must be a whole number/],
    [{ MAX_EVENT_LOOP_DELAY_MS: 'high' }, /^MAX_EVENT_LOOP_DELAY_MS must be a whole number/],
    [{ MAX_RSS_BYTES: '1e9' }, /^MAX_RSS_BYTES must be a whole number/],
    [{ SHUTDOWN_GRACE_SECONDS: '0' }, /^SHUTDOWN_GRACE_SECONDS must be between 1 and 3600/],
    [{ HEADERS_TIMEOUT_SECONDS: '0' }, /^HEADERS_TIMEOUT_SECONDS must be between 1 and 3600/],
    [{ IDLE_TIMEOUT_SECONDS: '2m' }, /^IDLE_TIMEOUT_SECONDS must be a whole number/],
    [{ PER_APP_CONCURRENCY: '0' }, /^PER_APP_CONCURRENCY must be between 1 and 10000/],
    [{ PER_APP_CONCURRENCY: 'four' }, /^PER_APP_CONCURRENCY must be a whole number/],
    [{ PER_APP_QUEUE: '-1' }, /^PER_APP_QUEUE must be a whole number/],
    [{ PER_APP_UPLOADS: '0' }, /^PER_APP_UPLOADS must be between 1 and 10000/],
    [{ PER_APP_QUEUE_TIMEOUT_SECONDS: '0' }, /^PER_APP_QUEUE_TIMEOUT_SECONDS must be between 1 and 3600/],
    [{ STORAGE_BACKEND: 'tape' }, /^STORAGE_BACKEND must be disk or s3/],
    [{ STORAGE_BACKEND: 's3' }, /^S3_BUCKET is required when STORAGE_BACKEND is s3/],
    [{ STORAGE_BACKEND: 's3', S3_BUCKET: 'My_Bucket' }, /^S3_BUCKET must be 3 to 63 characters/],
    [{ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_ENDPOINT: 'http://hunter2@s3.local/path' }, /^S3_ENDPOINT must be an http\(s\) origin/],
    [{ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_ACCESS_KEY_ID: 'AKIA' }, /^S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together/],
    [{ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_SECRET_ACCESS_KEY: 'hunter2' }, /^S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together/],
    [{ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_FORCE_PATH_STYLE: 'sometimes' }, /^S3_FORCE_PATH_STYLE must be true or false/],
    [{ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_PREFIX: '/abs' }, /^S3_PREFIX may hold only/],
    [{ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_PART_SIZE_BYTES: '1048576' }, /^S3_PART_SIZE_BYTES must be between 5242880 and/],
    [{ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_PART_SIZE_BYTES: '5242880', MAX_UPLOAD_BYTES: '100000000000' }, /^S3_PART_SIZE_BYTES must be at least MAX_UPLOAD_BYTES \/ 10000/],
    [{ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_UPLOAD_CONCURRENCY: '0' }, /^S3_UPLOAD_CONCURRENCY must be between 1 and 64/],
    [{ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_UPLOAD_MEMORY_BYTES: '1048576' }, /^S3_UPLOAD_MEMORY_BYTES must be between 16777216 and/],
  ];
  for (const [env, message] of cases) {
    const error = (() => {
      try {
        loadConfig(env);
      } catch (e) {
        return e;
      }
    })();
    t.type(error, ConfigError, JSON.stringify(env));
    t.match((error as Error).message, message);
    t.notMatch((error as Error).message, /hunter2|long-enough-secret/, 'no secret in the message');
  }
});

t.test('the S3 settings and their defaults', async (t) => {
  t.equal(loadConfig({}).storageBackend, 'disk');
  t.equal(loadConfig({}).s3, undefined);
  const onAws = loadConfig({ STORAGE_BACKEND: 'S3', S3_BUCKET: 'files' });
  t.equal(onAws.storageBackend, 's3');
  t.same(onAws.s3, {
    bucket: 'files',
    endpoint: undefined,
    region: 'us-east-1',
    accessKeyId: undefined,
    secretAccessKey: undefined,
    forcePathStyle: false,
    prefix: '',
    partSizeBytes: 16 * 1024 * 1024,
    uploadConcurrency: 4,
    uploadMemoryBytes: 64 * 1024 * 1024,
  });
  const selfHosted = loadConfig({
    STORAGE_BACKEND: 's3',
    S3_BUCKET: 'files.example',
    S3_ENDPOINT: 'http://rgw.internal:7480/',
    S3_REGION: 'eu-west-3',
    S3_ACCESS_KEY_ID: 'key-id',
    S3_SECRET_ACCESS_KEY: 'secret-key',
    S3_PREFIX: 'service/',
    S3_PART_SIZE_BYTES: String(8 * 1024 * 1024),
    S3_UPLOAD_CONCURRENCY: '8',
    S3_UPLOAD_MEMORY_BYTES: String(40 * 1024 * 1024),
  }).s3!;
  t.equal(selfHosted.endpoint, 'http://rgw.internal:7480');
  t.equal(selfHosted.forcePathStyle, true, 'path style by default with an endpoint');
  t.equal(selfHosted.prefix, 'service/');
  t.equal(selfHosted.partSizeBytes, 8 * 1024 * 1024);
  t.equal(selfHosted.uploadConcurrency, 8);
  t.equal(selfHosted.uploadMemoryBytes, 40 * 1024 * 1024);
  t.equal(loadConfig({ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_PART_SIZE_BYTES: String(100 * 1024 * 1024) }).s3!.uploadMemoryBytes, 100 * 1024 * 1024, 'room for one part at least');
  t.equal(loadConfig({ STORAGE_BACKEND: 's3', S3_BUCKET: 'files', S3_ENDPOINT: 'https://s3.example.com', S3_FORCE_PATH_STYLE: 'false' }).s3!.forcePathStyle, false);
});
