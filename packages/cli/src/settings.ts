import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';

/**
 * Where the command keeps what it needs between runs: the login in a config file
 * ($XDG_CONFIG_HOME/filestore/config.json), and the current AccessToken and the URLs of
 * unfinished resumable uploads as state ($XDG_STATE_HOME/filestore/). All of them mode 0600, in
 * folders of mode 0700: they hold the AppSecret and capabilities.
 */

export interface Login {
  url: string;
  appId: string;
  appSecret: string;
}

export type Env = Record<string, string | undefined>;

const folder = (env: Env, variable: string, fallback: string) => path.join(env[variable] || path.join(env.HOME || homedir(), fallback), 'filestore');
export const configFile = (env: Env) => path.join(folder(env, 'XDG_CONFIG_HOME', '.config'), 'config.json');
export const stateFile = (env: Env, name: string) => path.join(folder(env, 'XDG_STATE_HOME', path.join('.local', 'state')), name);

export async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${file} could not be read: ${(error as Error).message}`);
  }
}

/** Written whole to a temporary file and renamed, so a reader never sees half of it. */
export async function writePrivateJson(file: string, value: unknown): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, file);
}

/** The login: FILESTORE_URL, FILESTORE_APP_ID and FILESTORE_APP_SECRET override the config file's. */
export async function loadLogin(env: Env): Promise<Partial<Login>> {
  const saved = (await readJson<Partial<Login>>(configFile(env))) ?? {};
  return {
    url: env.FILESTORE_URL || saved.url,
    appId: env.FILESTORE_APP_ID || saved.appId,
    appSecret: env.FILESTORE_APP_SECRET || saved.appSecret,
  };
}
