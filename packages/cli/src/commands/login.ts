import { FileStore } from '@filestore/client';
import { line, UsageError, type Io } from '../output.js';
import { configFile, stateFile, writePrivateJson } from '../settings.js';

/** `login URL APPID`: checks the credentials with the service, then keeps them (mode 0600). */
export async function login(io: Io, url: string, appId: string, signal: AbortSignal): Promise<void> {
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    throw new UsageError(`${url} is not a URL (e.g. https://files.example.com).`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new UsageError(`${url} is not an http or https URL.`);
  const appSecret = io.env.FILESTORE_APP_SECRET || (await io.readSecret(`AppSecret of ${appId}: `));
  if (!appSecret) throw new UsageError('No AppSecret given.');
  const client = new FileStore({ url: base.href, appId, appSecret });
  const grant = await client.accessToken({ signal });
  const file = configFile(io.env);
  await writePrivateJson(file, { url: base.href, appId, appSecret });
  await writePrivateJson(stateFile(io.env, 'token.json'), { url: base.href, appId, grant: { AccessToken: grant.AccessToken, DeadTime: grant.DeadTime } });
  line(io.out, `Logged in to ${base.href} as ${appId}. Saved in ${file}.`);
}
