import { FileStore, type TokenGrant } from '@filestore/client';
import { UsageError, type Io } from './output.js';
import { loadLogin, readJson, stateFile, writePrivateJson, type Login } from './settings.js';

interface KeptToken {
  url: string;
  appId: string;
  grant: Pick<TokenGrant, 'AccessToken' | 'DeadTime'>;
}

/**
 * A client for the login. Its AccessToken is kept between runs until it is due for renewal: the
 * service limits how often an address may ask for one, and scripts run the command often.
 */
export async function openSession(io: Io, signal: AbortSignal): Promise<{ client: FileStore; login: Login; signal: AbortSignal }> {
  const login = await loadLogin(io.env);
  if (!login.url || !login.appId || !login.appSecret) {
    throw new UsageError('Not logged in: run `filestore login URL APPID`, or set FILESTORE_URL, FILESTORE_APP_ID and FILESTORE_APP_SECRET.');
  }
  const file = stateFile(io.env, 'token.json');
  const kept = await readJson<KeptToken>(file).catch(() => undefined);
  const token = kept && kept.url === login.url && kept.appId === login.appId ? kept.grant : undefined;
  let saving = Promise.resolve();
  const client = new FileStore({
    url: login.url,
    appId: login.appId,
    appSecret: login.appSecret,
    token,
    onToken: (grant) => {
      const value: KeptToken = { url: login.url!, appId: login.appId!, grant: { AccessToken: grant.AccessToken, DeadTime: grant.DeadTime } };
      saving = saving.then(() => writePrivateJson(file, value)).catch(() => {});
    },
  });
  return { client, login: login as Login, signal };
}
