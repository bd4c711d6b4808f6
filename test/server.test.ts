import t from 'tap';
import { serverData, startServerProcess } from './helpers/process.js';

t.test('a fresh start prints one app whose credentials get a token; a restart prints none', async (t) => {
  const { env } = await serverData(t, 'server');

  const first = await startServerProcess(env);
  const root = await fetch(`${first.baseUrl}/`);
  t.same(await root.json(), { Code: 0, Message: 'Welcome to the bucket file storage service. The API lives under /API/.' });
  const appId = /AppId:\s+(\S+)/.exec(first.output())?.[1];
  const appSecret = /AppSecret:\s+(\S+)/.exec(first.output())?.[1];
  t.ok(appId && appSecret, 'the credentials are printed');
  const token = await fetch(`${first.baseUrl}/API/AccessToken`, {
    method: 'POST',
    body: new URLSearchParams({ AppId: appId ?? '', AppSecret: appSecret ?? '' }),
  });
  const body = (await token.json()) as { Code: number; Message: string };
  t.equal(body.Code, 0);
  t.equal(body.Message, 'Successfully get access token.');
  t.equal(await first.stop(), 0, 'SIGTERM ends the process cleanly');

  const second = await startServerProcess(env);
  t.teardown(() => second.stop());
  t.same(await (await fetch(`${second.baseUrl}/health`)).json(), { Code: 0, Message: "The process is up." });
  t.notMatch(second.output(), /AppSecret/, 'the secret is never printed again');
  t.notMatch(second.output(), appSecret ?? '-');
});

t.test('a bad setting stops the start with a message naming the variable', async (t) => {
  await t.rejects(startServerProcess({ PORT: 'eighty' }), /exited with 78[\s\S]*PORT must be a whole number/);
  await t.rejects(startServerProcess({ DATABASE_URL: 'mysql://user:hunter2@db/x' }), /DATABASE_URL must be a postgres/);
  const withSecret = startServerProcess({ BOOTSTRAP_APPS: 'good-app:short' });
  await t.rejects(withSecret, /BOOTSTRAP_APPS entry 1 \(app "good-app"\) needs a secret of at least 16 characters/);
  await withSecret.catch((error: Error) => t.notMatch(error.message, /short/, 'the secret is not echoed'));
});
