/**
 * `npm run soak -- --seconds N --instances K`: K instances of the service on one PostgreSQL
 * database (SOAK_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres; a fresh
 * database per run) and one storage folder, under a mixed load for N seconds, one instance restarted
 * with SIGTERM halfway. A ledger of every acknowledged upload and delete is checked exactly at the
 * end; RSS and open file descriptors of each instance are sampled; p50/p99 per operation are
 * printed. Exits 1 on any 5xx, any inconsistency or stray bytes.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { callJson } from './load.js';
import { killAllNow } from './processes.js';
import { createBenchDatabase, prepareService, startService, type ServiceSetup } from './service.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const WORKERS = 6;
/** Well inside the service's default token lifetime (20 minutes), as a long-running client renews. */
const TOKEN_RENEW_MS = 5 * 60 * 1000;
/** Above this many live bytes, each large upload first deletes a large file: an hour must not fill the disk. */
const LIVE_BYTES_CAP = 2 * 1024 * MiB;

interface Acknowledged {
  sha256: string;
  size: number;
  bucketId: number;
}

interface Instance {
  origin: string;
  pid: number;
  stop(): Promise<void>;
  /** True while it is being restarted: requests go elsewhere. */
  away: boolean;
}

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const raw = at >= 0 ? process.argv[at + 1] : process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number above 0`);
  return value;
}

/** A multipart upload over a raw socket; `abortAt` destroys it after that many body bytes. */
function upload(origin: string, query: Record<string, string | number>, content: Buffer, abortAt?: number): Promise<{ status: number; json: Record<string, unknown> }> {
  const boundary = `soak${randomBytes(8).toString('hex')}`;
  const url = new URL('/API/UploadFile', origin);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="File"; filename="f-${randomBytes(6).toString('hex')}.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const body = Buffer.concat([head, content, Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': body.length } });
    request.on('error', reject);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        try {
          resolve({ status: response.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown> });
        } catch (error) {
          reject(error);
        }
      });
    });
    if (abortAt === undefined) request.end(body);
    else request.write(body.subarray(0, abortAt), () => setTimeout(() => request.destroy(), 50));
  });
}

async function download(origin: string, fileKey: number, range?: string): Promise<{ status: number; bytes: Buffer }> {
  const response = await fetch(`${origin}/Download/FromKey/${fileKey}`, { headers: range ? { range } : {} });
  return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

function sample(pid: number): { rss: number; fds: number } | undefined {
  try {
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * KiB;
    return { rss, fds: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return undefined;
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function main(): Promise<void> {
  const seconds = option('seconds', 60);
  const instanceCount = option('instances', 2);
  const serverUrl = process.env.SOAK_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const database = await createBenchDatabase(serverUrl);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'filestore-soak-'));
  const setup: ServiceSetup = { db: 'postgres', databaseUrl: database.url, dataDir, appId: 'soak-app', appSecret: randomBytes(18).toString('hex') };
  const failures: string[] = [];
  const latencies = new Map<string, number[]>();
  const statuses = new Map<string, number>();
  const samples = new Map<number, Array<{ at: number; rss: number; fds: number }>>();
  const ledger = new Map<number, Acknowledged>();
  const deleted = new Set<number>();

  try {
    const instances: Instance[] = [];
    const launch = async (): Promise<Instance> => {
      const started = await startService(setup);
      return { origin: started.origin, pid: started.child.pid, stop: () => started.child.stop(), away: false };
    };
    for (let i = 0; i < instanceCount; i++) instances.push(await launch());
    const first = await prepareService(setup, { child: undefined as never, origin: instances[0]!.origin });
    const bucketId = first.bucketId;
    let token = first.token;
    let renewAt = Date.now() + TOKEN_RENEW_MS;
    let renewing: Promise<void> | undefined;
    const currentToken = async (): Promise<string> => {
      if (Date.now() >= renewAt) {
        renewing ??= (async () => {
          const answer = await callJson(pick().origin, '/API/AccessToken', { AppId: setup.appId, AppSecret: setup.appSecret });
          if (answer.json.Code !== 0) throw new Error(`AccessToken refused: ${JSON.stringify(answer.json)}`);
          token = String(answer.json.AccessToken);
          renewAt = Date.now() + TOKEN_RENEW_MS;
        })().finally(() => {
          renewing = undefined;
        });
        await renewing;
      }
      return token;
    };
    const pick = () => {
      const live = instances.filter((instance) => !instance.away);
      return live[randomInt(live.length)]!;
    };

    const timed = async <T>(op: string, run: () => Promise<T & { status: number }>): Promise<T & { status: number }> => {
      const started = performance.now();
      const result = await run();
      const list = latencies.get(op) ?? [];
      list.push(performance.now() - started);
      latencies.set(op, list);
      statuses.set(`${Math.floor(result.status / 100)}xx`, (statuses.get(`${Math.floor(result.status / 100)}xx`) ?? 0) + 1);
      if (result.status >= 500 && result.status !== 503) failures.push(`${op}: ${result.status}`);
      return result;
    };
    const liveKeys = () => [...ledger.keys()].filter((key) => !deleted.has(key));
    const largeLive = new Set<number>();
    let liveBytes = 0;
    const acknowledge = (key: number, content: Buffer) => {
      ledger.set(key, { sha256: sha256(content), size: content.length, bucketId });
      liveBytes += content.length;
      if (content.length >= MiB) largeLive.add(key);
    };
    // Every upload and delete of the soak's own app in its own bucket must succeed; only an instance
    // that is shutting down may refuse (503).
    const refused = (op: string, status: number, json: Record<string, unknown>) => {
      if (status !== 503) failures.push(`${op} refused: ${status} ${JSON.stringify(json)}`);
    };
    const deleteFile = async (origin: string, key: number) => {
      // One delete per file: a second one, while the first is in flight, would be refused and
      // would take the file off the deleted list although the first removed it.
      if (deleted.has(key)) return;
      deleted.add(key);
      const { status, json } = await timed('delete', async () => callJson(origin, '/API/DeleteFile', { AccessToken: await currentToken(), FileKey: key }));
      if (status === 200 && json.Code === 0) {
        liveBytes -= ledger.get(key)?.size ?? 0;
        largeLive.delete(key);
      } else {
        // Only an acknowledged delete counts; otherwise the file may or may not be there.
        deleted.delete(key);
        refused('delete', status, json);
      }
    };
    const anyKey = () => {
      const keys = liveKeys();
      return keys.length ? keys[randomInt(keys.length)] : undefined;
    };

    const ops: Array<[weight: number, name: string, run: (origin: string) => Promise<void>]> = [
      [20, 'upload-small', async (origin) => {
        const content = randomBytes(randomInt(1, 64 * KiB));
        const { status, json } = await timed('upload-small', async () => upload(origin, { AccessToken: await currentToken(), BucketId: bucketId, AliveDays: 1 }, content));
        if (status === 200 && json.Code === 0) acknowledge(Number(json.FileKey), content);
        else refused('upload-small', status, json);
      }],
      [3, 'upload-large', async (origin) => {
        if (liveBytes > LIVE_BYTES_CAP) {
          const large = [...largeLive].filter((key) => !deleted.has(key));
          if (large.length > 0) await deleteFile(origin, large[randomInt(large.length)]!);
        }
        const content = randomBytes(randomInt(4 * MiB, 16 * MiB));
        const { status, json } = await timed('upload-large', async () => upload(origin, { AccessToken: await currentToken(), BucketId: bucketId, AliveDays: 1 }, content));
        if (status === 200 && json.Code === 0) acknowledge(Number(json.FileKey), content);
        else refused('upload-large', status, json);
      }],
      [25, 'download', async (origin) => {
        const key = anyKey();
        if (key === undefined) return;
        const { status, bytes } = await timed('download', () => download(origin, key));
        if (status === 200 && sha256(bytes) !== ledger.get(key)?.sha256) failures.push(`download ${key}: wrong bytes`);
      }],
      [10, 'download-range', async (origin) => {
        const key = anyKey();
        const entry = key === undefined ? undefined : ledger.get(key);
        if (key === undefined || !entry || entry.size < 2) return;
        const start = randomInt(entry.size - 1);
        const { status, bytes } = await timed('download-range', () => download(origin, key, `bytes=${start}-`));
        if (status === 206 && bytes.length !== entry.size - start) failures.push(`range ${key}: ${bytes.length} bytes, wanted ${entry.size - start}`);
      }],
      [20, 'metadata', async (origin) => {
        const key = anyKey();
        if (key === undefined) return;
        await timed('metadata', () => callJson(origin, `/API/ViewOneFile?FileKey=${key}`));
      }],
      [6, 'delete', async (origin) => {
        const key = anyKey();
        if (key === undefined) return;
        await deleteFile(origin, key);
      }],
      [4, 'bucket-churn', async (origin) => {
        const created = await timed('bucket-create', async () => callJson(origin, '/API/CreateBucket', { AccessToken: await currentToken(), BucketName: `churn-${randomBytes(5).toString('hex')}`, OpenToRead: true, OpenToUpload: false }));
        if (created.json.Code !== 0) return refused('bucket-create', created.status, created.json);
        const removed = await timed('bucket-delete', async () => callJson(origin, '/API/DeleteBucket', { AccessToken: await currentToken(), BucketId: Number(created.json.BucketId) }));
        if (removed.json.Code !== 0) refused('bucket-delete', removed.status, removed.json);
      }],
      [6, 'bad-request', async (origin) => {
        const { status, json } = await timed('bad-request', () => callJson(origin, `/API/ViewOneFile?FileKey=${['abc', '-1', '1e99', ''][randomInt(4)]}`));
        // The protocol's envelope: a refusal is Code -1 with a Message, never a 5xx.
        if (json.Code === 0 || typeof json.Message !== 'string' || status >= 500) failures.push(`bad request answered ${status} ${JSON.stringify(json)}`);
      }],
      [3, 'upload-aborted', async (origin) => {
        await upload(origin, { AccessToken: await currentToken(), BucketId: bucketId, AliveDays: 1 }, randomBytes(2 * MiB), randomInt(1024, MiB)).catch(() => {});
      }],
    ];
    const totalWeight = ops.reduce((sum, [weight]) => sum + weight, 0);
    const choose = () => {
      let roll = randomInt(totalWeight);
      for (const op of ops) {
        if ((roll -= op[0]) < 0) return op;
      }
      return ops[0]!;
    };

    const began = Date.now();
    const end = began + seconds * 1000;
    const sampler = setInterval(() => {
      for (const instance of instances) {
        const found = sample(instance.pid);
        if (found) samples.set(instance.pid, [...(samples.get(instance.pid) ?? []), { at: Date.now() - began, ...found }]);
      }
    }, 2000);
    let connectionErrors = 0;
    // From SIGTERM of the restarted instance until its replacement is ready: requests in flight on
    // it may see the connection closed (an upload still sending its body when the 503 comes sees
    // EPIPE or a reset); outside this window any connection error is a failure.
    let restarting = false;
    const worker = async () => {
      while (Date.now() < end) {
        const [, name, run] = choose();
        try {
          await run(pick().origin);
        } catch (error) {
          // A connection refused or closed by the instance being restarted; anything else is a failure.
          const code = (error as { cause?: { code?: string }; code?: string }).cause?.code ?? (error as { code?: string }).code;
          if (restarting && ['ECONNREFUSED', 'UND_ERR_SOCKET', 'EPIPE', 'ECONNRESET'].includes(code ?? '')) connectionErrors += 1;
          else failures.push(`${name}: ${(error as Error).message}`);
        }
      }
    };
    const restart = (async () => {
      await new Promise((resolve) => setTimeout(resolve, (seconds * 1000) / 2));
      const target = instances[0]!;
      restarting = true;
      target.away = true;
      await target.stop();
      const replacement = await launch();
      instances[0] = replacement;
      restarting = false;
      process.stdout.write(`restarted instance 1 with SIGTERM after ${((Date.now() - began) / 1000).toFixed(0)} s\n`);
    })();
    await Promise.all([...Array.from({ length: WORKERS }, worker), restart]);
    clearInterval(sampler);

    // Exact consistency: every acknowledged upload not deleted is listed once and byte-identical.
    const origin = instances[instances.length - 1]!.origin;
    const listed = await callJson(origin, `/API/ViewAllFiles?AccessToken=${await currentToken()}&BucketId=${bucketId}`);
    if (listed.json.Code !== 0) failures.push(`ViewAllFiles refused: ${listed.status} ${JSON.stringify(listed.json)}`);
    const keys = ((listed.json.AllFiles as Array<{ FileKey: number }>) ?? []).map((file) => file.FileKey);
    const expected = liveKeys().sort((a, b) => a - b);
    if (JSON.stringify([...keys].sort((a, b) => a - b)) !== JSON.stringify(expected)) failures.push(`listing has ${keys.length} files, the ledger ${expected.length}`);
    for (const key of expected) {
      const { status, bytes } = await download(origin, key);
      if (status !== 200 || sha256(bytes) !== ledger.get(key)?.sha256) failures.push(`file ${key}: ${status}, not the bytes acknowledged`);
    }
    for (const key of deleted) {
      if ((await download(origin, key)).status !== 404) failures.push(`deleted file ${key} is still served`);
    }
    const detail = await callJson(origin, `/API/ViewBucketDetail?AccessToken=${await currentToken()}&BucketId=${bucketId}`);
    const fileCount = (detail.json.Bucket as { FileCount?: number } | undefined)?.FileCount ?? detail.json.FileCount;
    if (fileCount !== expected.length) failures.push(`FileCount ${String(fileCount)}, the ledger ${expected.length}`);

    // No stray bytes once every instance has shut down cleanly.
    for (const instance of instances) await instance.stop();
    const tmpLeft = await readdir(path.join(dataDir, 'files', 'tmp'));
    if (tmpLeft.length > 0) failures.push(`${tmpLeft.length} temp files left after a clean shutdown`);
    const objects = (await readdir(path.join(dataDir, 'files', 'objects'), { recursive: true })).filter((entry) => entry.length > 3);
    if (objects.length !== expected.length) failures.push(`${objects.length} stored objects for ${expected.length} files`);

    const report = {
      seconds,
      instances: instanceCount,
      acknowledgedUploads: ledger.size,
      acknowledgedDeletes: deleted.size,
      filesAtEnd: expected.length,
      statuses: Object.fromEntries(statuses),
      connectionErrorsDuringRestart: connectionErrors,
      latencyMs: Object.fromEntries(
        [...latencies].map(([op, list]) => {
          const sorted = [...list].sort((a, b) => a - b);
          return [op, { count: sorted.length, p50: Number(percentile(sorted, 50).toFixed(1)), p99: Number(percentile(sorted, 99).toFixed(1)) }];
        }),
      ),
      // After warm-up (the first quarter) against the end: growth shows a leak.
      resources: [...samples].map(([pid, list]) => {
        const warm = list[Math.floor(list.length / 4)];
        const last = list[list.length - 1];
        return { pid, samples: list.length, rssMiBAfterWarmUp: warm && Math.round(warm.rss / MiB), rssMiBAtEnd: last && Math.round(last.rss / MiB), fdsAfterWarmUp: warm?.fds, fdsAtEnd: last?.fds, fdsMax: Math.max(...list.map((s) => s.fds)) };
      }),
      failures: failures.slice(0, 50),
      failureCount: failures.length,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    process.exitCode = failures.length === 0 ? 0 : 1;
  } finally {
    killAllNow();
    await database.drop().catch(() => {});
    await rm(dataDir, { recursive: true, force: true });
  }
}

process.once('exit', killAllNow);
main().catch((error: unknown) => {
  process.stderr.write(`soak failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  killAllNow();
  process.exit(1);
});
