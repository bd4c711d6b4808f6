import t from 'tap';
import { createApp } from '../src/services/apps.js';
import { redactUrl } from '../src/log-redaction.js';
import { postForm, startService } from './helpers/service.js';

t.test('secret query values are redacted, whatever their casing or encoding', async (t) => {
  t.equal(redactUrl('/API/X?AccessToken=abc&BucketId=3'), '/API/X?AccessToken=[REDACTED]&BucketId=3');
  t.equal(redactUrl('/api/x?accesstoken=abc'), '/api/x?accesstoken=[REDACTED]');
  t.equal(redactUrl('/a?Access%54oken=abc&appSecret=s&sec=q'), '/a?Access%54oken=[REDACTED]&appSecret=[REDACTED]&sec=[REDACTED]');
  t.equal(redactUrl('/a?%zz=1&AppSecret'), '/a?%zz=1&AppSecret=[REDACTED]');
  t.equal(redactUrl('/plain/path'), '/plain/path');
});

t.test('no secret reaches a log line, on success, refusal or fault', async (t) => {
  const service = await startService(t);
  service.app.get('/fault', async () => {
    throw new Error('fault');
  });
  const { appId, appSecret } = await createApp(service.app.db);
  const fromQuery = await service.app.inject({ url: `/API/AccessToken?AppId=${appId}&AppSecret=${appSecret}` });
  const token = fromQuery.json().AccessToken as string;
  await postForm(service.app, '/API/AccessToken', { AppId: appId, AppSecret: appSecret });
  await service.app.inject({ url: `/API/AccessToken?appid=${appId}&appsecret=${appSecret}x` });
  await service.app.inject({ url: `/API/Nowhere?AccessToken=${token}` });
  await service.app.inject({ url: `/fault?accessToken=${token}&APPSECRET=${appSecret}` });

  const logs = service.logs.join('\n');
  t.ok(service.logs.length >= 10, 'requests were logged');
  t.match(logs, /\[REDACTED\]/, 'the URLs were logged, redacted');
  t.notMatch(logs, appSecret, 'no AppSecret');
  t.notMatch(logs, token, 'no AccessToken');
});
