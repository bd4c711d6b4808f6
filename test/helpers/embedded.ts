import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Test } from 'tap';
import { serverData } from './process.js';

/** What the embedded server's tests share: one bootstrapped app, calls over a real socket. */
export const APP = { id: 'embedded-app', secret: 'embedded-app-secret-0123456789' };

export async function call(base: string, url: string, fields: Record<string, string>): Promise<Record<string, unknown>> {
  return (await (await fetch(`${base}${url}`, { method: 'POST', body: new URLSearchParams(fields) })).json()) as Record<string, unknown>;
}

export async function bucketDetail(base: string, bucketId: unknown): Promise<Record<string, unknown>> {
  return (await (await fetch(`${base}/API/ViewBucketDetail?BucketId=${bucketId}`)).json()) as Record<string, unknown>;
}

export async function tokenOf(base: string): Promise<string> {
  return (await call(base, '/API/AccessToken', { AppId: APP.id, AppSecret: APP.secret })).AccessToken as string;
}

export async function postmasterPid(dataDir: string): Promise<number> {
  return Number.parseInt((await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]!, 10);
}

/** Alive and not a zombie waiting for its adoptive parent to reap it. */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** These tests are about the database's lifecycle: a busy machine must not turn their requests away. */
export const NO_LOAD_SHEDDING = { MAX_EVENT_LOOP_DELAY_MS: '0' };

/** A DATA_DIR seeded with a cluster, and the environment of a service that bootstraps APP. */
export async function embeddedData(t: Test) {
  const data = await serverData(t, 'embedded');
  return { data, env: { ...data.env, BOOTSTRAP_APPS: `${APP.id}:${APP.secret}`, ...NO_LOAD_SHEDDING } };
}
