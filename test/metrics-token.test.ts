import t from 'tap';
import { loadConfig } from '../src/config.js';
import { startService } from './helpers/service.js';

const METRICS_TOKEN = 'scrape-me-0123456789abcdef';
const REQUIRED = { Code: -1, Message: 'A valid metrics token is required.' };

t.test('METRICS_TOKEN must carry real entropy, and is never echoed', async (t) => {
  t.equal(loadConfig({}).metricsToken, undefined);
  t.equal(loadConfig({ METRICS_TOKEN }).metricsToken, METRICS_TOKEN);
  t.throws(() => loadConfig({ METRICS_TOKEN: 'short-secret' }), { name: 'ConfigError', message: 'METRICS_TOKEN must be at least 16 characters long.' });
});

t.test('with METRICS_TOKEN set, /metrics answers only its Bearer token', async (t) => {
  const service = await startService(t, { env: { METRICS_TOKEN } });
  const { app } = service;

  const refusals = [
    await app.inject({ url: '/metrics' }),
    await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}x` } }),
    await app.inject({ url: '/metrics', headers: { authorization: `Basic ${Buffer.from(`x:${METRICS_TOKEN}`).toString('base64')}` } }),
    await app.inject({ url: `/metrics?token=${METRICS_TOKEN}` }),
  ];
  for (const response of refusals) {
    t.equal(response.statusCode, 401);
    t.equal(response.headers['www-authenticate'], 'Bearer');
    t.same(response.json(), REQUIRED);
    t.notMatch(response.body, /filestore_|process_/, 'no metric leaks');
  }

  const scraped = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  t.equal(scraped.statusCode, 200);
  t.match(scraped.headers['content-type'], /^text\/plain/);
  t.match(scraped.body, /^filestore_http_request_duration_seconds_count\{route="\/metrics",method="GET",status="401"\} 4$/m, 'the refusals were counted');

  const health = await app.inject({ url: '/health' });
  t.equal(health.statusCode, 200, 'the probes need no token');
  t.notMatch(service.logs.join('\n'), METRICS_TOKEN, 'the token is never logged');
});

t.test('without METRICS_TOKEN, /metrics is open as before', async (t) => {
  const service = await startService(t);
  const response = await service.app.inject({ url: '/metrics' });
  t.equal(response.statusCode, 200);
  t.match(response.body, /filestore_under_pressure/);
  const withHeader = await service.app.inject({ url: '/metrics', headers: { authorization: 'Bearer anything-at-all-here' } });
  t.equal(withHeader.statusCode, 200, 'a header is not needed and does no harm');
});
