import t from 'tap';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { connectDatabase } from '../db/connect.js';
import { postForm, startService } from './helpers/service.js';

const VALIDATION = 'Your input contains several errors!';

t.test('unknown routes get 404 with the envelope', async (t) => {
  const service = await startService(t);
  for (const [method, url] of [
    ['GET', '/API/NoSuchOperation'],
    ['POST', '/API/ViewMyBuckets'],
    ['DELETE', '/'],
    ['GET', `/${'x'.repeat(5000)}`],
  ] as const) {
    const response = await service.app.inject({ method, url });
    t.equal(response.statusCode, 404, `${method} ${url.slice(0, 30)}`);
    t.match(response.headers['content-type'], /^application\/json/);
    t.equal(response.json().Code, -1);
    t.match(response.json().Message, /^There is no (GET|POST|DELETE) operation at \//);
  }
});

t.test('bodies of the wrong type or too large are refused with -10', async (t) => {
  const service = await startService(t);
  const text = await service.app.inject({
    method: 'POST',
    url: '/API/AccessToken',
    payload: 'AppId=a&AppSecret=b',
    headers: { 'content-type': 'text/plain' },
  });
  t.equal(text.statusCode, 415);
  t.same(text.json(), {
    Code: -10,
    Message: VALIDATION,
    Items: ['The request body must be application/x-www-form-urlencoded or application/json (multipart/form-data for UploadFile).'],
  });

  const huge = await postForm(service.app, '/API/AccessToken', { AppId: 'a', AppSecret: 'x'.repeat(2 * 1024 * 1024) });
  t.equal(huge.statusCode, 413);
  t.same(huge.json(), { Code: -10, Message: VALIDATION, Items: ['The request body is larger than the service accepts.'] });
});

t.test('an unexpected fault is a 500 with a reference and no internals', async (t) => {
  const service = await startService(t);
  service.app.get('/fault', async () => {
    throw new Error('select secret_hash from apps /var/lib/data exploded');
  });
  const response = await service.app.inject({ url: '/fault' });
  t.equal(response.statusCode, 500);
  const body = response.json();
  t.equal(body.Code, -1);
  t.match(body.Message, /^An unexpected error occurred; quote reference [0-9a-f-]{36} when reporting it\.$/);
  t.notMatch(response.body, /secret_hash|\/var\/lib|exploded|stack/);
  const reference = /reference ([0-9a-f-]{36})/.exec(body.Message)?.[1];
  const logged = service.logs.map((line) => JSON.parse(line)).find((entry) => entry.level === 50);
  t.equal(logged?.reqId, reference, 'the fault is logged with the request id');
  t.match(logged?.err?.message, /exploded/, 'the log has the details the reply does not');
});

t.test('an unreachable database is a 503 with the envelope, on both drivers', async (t) => {
  // Nothing listens on port 1: every query fails to connect.
  const database = await connectDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:1/none', dataDir: '' });
  t.teardown(() => database.close());
  const app = await buildApp({ config: loadConfig({ DATA_DIR: t.testdirName, LOG_LEVEL: 'silent' }), database });
  t.teardown(() => app.close());
  const response = await postForm(app, '/API/AccessToken', { AppId: 'some-app', AppSecret: 'some-secret' });
  t.equal(response.statusCode, 503);
  t.same(response.json(), { Code: -1, Message: 'The database is unreachable right now; try again shortly.' });
  const ready = await app.inject({ url: '/ready' });
  t.equal(ready.statusCode, 503);
  t.same(ready.json(), { Code: -1, Message: 'Not ready: the database is unreachable.' });
});

t.test('odd parameter names are ignored and never crash', async (t) => {
  const service = await startService(t);
  const response = await service.app.inject({
    url: `/API/AccessToken?__proto__=x&constructor=y&prototype=z&${'n'.repeat(10_000)}=1&AppId=a`,
  });
  t.equal(response.statusCode, 200);
  t.same(response.json(), { Code: -10, Message: VALIDATION, Items: ['The AppSecret field is required.'] });
  const body = await postForm(service.app, '/API/AccessToken', { __proto__: 'x', constructor: 'y', AppId: 'a', AppSecret: 'b' } as never);
  t.same(body.json(), { Code: -1, Message: 'The AppId and AppSecret do not match any app.' });
});
