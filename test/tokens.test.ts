import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { createApp } from '../src/services/apps.js';
import { appForToken } from '../src/services/tokens.js';
import { postForm, startService, testDatabase } from './helpers/service.js';

const WRONG_PAIR = { Code: -1, Message: 'The AppId and AppSecret do not match any app.' };

t.test('an app exchanges its AppId and AppSecret for a token, by GET or POST', async (t) => {
  const service = await startService(t);
  const { appId, appSecret } = await createApp(service.app.db);

  const before = Date.now();
  const post = await postForm(service.app, '/API/AccessToken', { AppId: appId, AppSecret: appSecret });
  t.equal(post.statusCode, 200);
  const body = post.json();
  t.equal(body.Code, 0);
  t.equal(body.Message, 'Successfully get access token.');
  t.match(body.AccessToken, /^[A-Za-z0-9_-]{43}$/);
  t.match(body.DeadTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const lifetime = Date.parse(body.DeadTime) - before;
  t.ok(lifetime > 19 * 60_000 && lifetime <= 20 * 60_000 + 1000, 'lives 20 minutes by default');
  t.equal(await appForToken(service.app.db, body.AccessToken), appId);

  const get = await service.app.inject({ url: `/api/accesstoken?appid=${appId}&APPSECRET=${appSecret}` });
  t.equal(get.json().Code, 0, 'lower-case path and parameter names');
  t.not(get.json().AccessToken, body.AccessToken, 'each request gets its own token');
});

t.test('a wrong pair gets one answer, whether or not the AppId exists', async (t) => {
  const service = await startService(t);
  const { appId } = await createApp(service.app.db);
  const wrongSecret = await postForm(service.app, '/API/AccessToken', { AppId: appId, AppSecret: 'x'.repeat(43) });
  const unknownApp = await postForm(service.app, '/API/AccessToken', { AppId: 'no-such-app', AppSecret: 'x'.repeat(43) });
  const oddApp = await postForm(service.app, '/API/AccessToken', { AppId: "'; drop table apps; --", AppSecret: 'x' });
  for (const response of [wrongSecret, unknownApp, oddApp]) {
    t.equal(response.statusCode, 200);
    t.same(response.json(), WRONG_PAIR);
  }
});

t.test('missing and malformed credentials are validation failures', async (t) => {
  const service = await startService(t);
  const none = await postForm(service.app, '/API/AccessToken', {});
  t.same(none.json(), {
    Code: -10,
    Message: 'Your input contains several errors!',
    Items: ['The AppId field is required.', 'The AppSecret field is required.'],
  });
  const huge = await service.app.inject({ url: `/API/AccessToken?AppId=${'a'.repeat(5000)}&AppSecret=s` });
  t.same(huge.json().Items, ['The field AppId must be a string with a maximum length of 64.']);
  const twice = await service.app.inject({ url: '/API/AccessToken?AppId=a&appid=b&AppSecret=s' });
  t.same(twice.json().Items, ['The AppId field was given more than once.']);
});

t.test('a token stops working when it expires', async (t) => {
  const service = await startService(t, { env: { TOKEN_LIFETIME_SECONDS: '1' } });
  const { appId, appSecret } = await createApp(service.app.db);
  const token = await service.token(appId, appSecret);
  t.equal(await appForToken(service.app.db, token), appId);
  await sleep(1100);
  await t.rejects(appForToken(service.app.db, token), { code: -1, message: 'Invalid or expired AccessToken.' });
});

t.test('a token stops working at once when its app is deleted', async (t) => {
  const service = await startService(t);
  const { appId, appSecret } = await createApp(service.app.db);
  const token = await service.token(appId, appSecret);
  await service.app.db.deleteFrom('apps').where('app_id', '=', appId).execute();
  await t.rejects(appForToken(service.app.db, token), { code: -1, message: 'Invalid or expired AccessToken.' });
  const tokens = await service.app.db.selectFrom('access_tokens').where('app_id', '=', appId).selectAll().execute();
  t.same(tokens, [], 'its tokens are gone from the database');
});

t.test('bad tokens are refused the same way', async (t) => {
  const service = await startService(t);
  const { token } = await service.newApp();
  for (const bad of ['', 'x', token.slice(0, -1), `${token}x`, token.toUpperCase(), '\u0000', '../../etc/passwd']) {
    await t.rejects(appForToken(service.app.db, bad), { code: -1, message: 'Invalid or expired AccessToken.' }, JSON.stringify(bad));
  }
});

t.test('lookups of one token that arrive together share one query, and none answers from before its request', async (t) => {
  const service = await startService(t);
  const { appId, token } = await service.newApp();
  let queries = 0;
  const counted = service.app.db.withPlugin({ transformQuery: (args) => args.node, transformResult: async (args) => (queries++, args.result) });
  const burst = await Promise.all(Array.from({ length: 200 }, () => appForToken(counted, token)));
  t.ok(burst.every((id) => id === appId), 'all 200 name the app');
  t.equal(queries, 1, 'in one query');
  const other = await service.newApp();
  const mixed = await Promise.all([appForToken(counted, token), appForToken(counted, other.token), appForToken(counted, token)]);
  t.same(mixed, [appId, other.appId, appId], 'each token its own app');
  t.equal(queries, 3, 'one query per token');

  // Once its query has gone out, a lookup takes no one along: whoever asks afterwards gets a query
  // of their own, which sees every change made before they asked.
  const early = appForToken(counted, token);
  await new Promise((resolve) => setImmediate(resolve));
  const late = appForToken(counted, token);
  t.same(await Promise.all([early, late]), [appId, appId]);
  t.equal(queries, 5, 'two queries');
});

t.test('a token from one instance is accepted by another on the same database', async (t) => {
  const database = await testDatabase();
  const one = await startService(t);
  const two = await startService(t, { database: await database.openAnother() });
  const { appId, token } = await one.newApp();
  t.equal(await appForToken(two.app.db, token), appId);
});

t.test('the token endpoint is rate limited per client address', async (t) => {
  const service = await startService(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '3' } });
  const { appId, appSecret } = await createApp(service.app.db);
  for (let i = 0; i < 3; i++) {
    const ok = await postForm(service.app, '/API/AccessToken', { AppId: appId, AppSecret: appSecret });
    t.equal(ok.json().Code, 0);
  }
  const limited = await postForm(service.app, '/API/AccessToken', { AppId: appId, AppSecret: appSecret });
  t.equal(limited.statusCode, 429);
  t.equal(limited.json().Code, -1);
  t.match(limited.json().Message, /^Too many requests; try again in \d+ seconds\.$/);
  t.ok(Number(limited.headers['retry-after']) > 0, 'Retry-After is set');
  const byGet = await service.app.inject({ url: `/API/AccessToken?AppId=${appId}&AppSecret=${appSecret}` });
  t.equal(byGet.statusCode, 429, 'GET shares the allowance of POST');
  t.equal((await service.app.inject({ method: 'HEAD', url: '/API/AccessToken' })).statusCode, 429, 'and so does HEAD');
  const otherClient = await service.app.inject({
    method: 'POST',
    url: '/API/AccessToken',
    payload: `AppId=${appId}&AppSecret=${appSecret}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    remoteAddress: '10.9.8.7',
  });
  t.equal(otherClient.json().Code, 0, 'another address has its own allowance');
});
