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
