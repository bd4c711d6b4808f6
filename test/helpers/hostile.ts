import { readdir } from 'node:fs/promises';
import net from 'node:net';
import type { Test } from 'tap';
import type { TestService } from './service.js';

export interface Answer {
  status: number;
  body: Record<string, unknown> | undefined;
}

export interface HostileCase {
  name: string;
  send(): Promise<Answer>;
  /** The expected HTTP status and envelope; Items or Message are compared when given. */
  expect: { status: number; Code: number; Message?: string | RegExp; Items?: readonly string[] };
}

/**
 * Everything a hostile request must not change: rows of every table (download counts aside, which
 * a legitimate download may move) and the files under the storage folder.
 */
export async function snapshot(service: TestService): Promise<string> {
  const db = service.app.db;
  const [apps, tokens, buckets, files, secrets] = await Promise.all([
    db.selectFrom('apps').select(['app_id', 'secret_hash']).orderBy('app_id').execute(),
    db.selectFrom('access_tokens').select('token_hash').orderBy('token_hash').execute(),
    db.selectFrom('buckets').selectAll().orderBy('bucket_id').execute(),
    db.selectFrom('files').select(['file_key', 'bucket_id', 'real_file_name', 'storage_key', 'expires_at']).orderBy('file_key').execute(),
    db.selectFrom('download_secrets').select(['secret_hash', 'uses_left']).orderBy('secret_hash').execute(),
  ]);
  const stored = (await readdir(service.config.storageDir, { recursive: true })).sort();
  return JSON.stringify({ apps, tokens, buckets, files, secrets, stored });
}

/** Runs each case: the expected envelope, never a 500, nothing changed, and the process still answering. */
export async function runCases(t: Test, service: TestService, cases: readonly HostileCase[]): Promise<void> {
  const names = new Set<string>();
  for (const c of cases) {
    if (names.has(c.name)) throw new Error(`duplicate case name ${c.name}`);
    names.add(c.name);
    const before = await snapshot(service);
    const answer = await c.send();
    t.not(answer.status, 500, `${c.name}: no 500`);
    t.equal(answer.status, c.expect.status, `${c.name}: status`);
    t.equal(answer.body?.Code, c.expect.Code, `${c.name}: Code`);
    if (c.expect.Message !== undefined) t.match(answer.body?.Message, c.expect.Message, `${c.name}: Message`);
    if (c.expect.Items !== undefined) t.same(answer.body?.Items, c.expect.Items, `${c.name}: Items`);
    t.equal(await snapshot(service), before, `${c.name}: nothing changed`);
  }
  const health = await service.app.inject({ url: '/health' });
  t.equal(health.statusCode, 200, 'the process is alive afterwards');
}

/** Sends exact bytes over a socket (for requests no well-behaved client would build). */
export function rawRequest(baseUrl: string, bytes: string | Buffer): Promise<Answer> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      const json = text.slice(text.indexOf('\r\n\r\n') + 4);
      let body: Record<string, unknown> | undefined;
      try {
        body = JSON.parse(json.includes('\r\n') && !json.startsWith('{') ? json.split('\r\n')[1] : json);
      } catch {
        body = undefined;
      }
      resolve({ status, body });
    });
    socket.end(bytes);
  });
}
