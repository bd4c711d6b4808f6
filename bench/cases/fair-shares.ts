/**
 * fair-shares: another app's ViewOneFile and GET /health, timed one after another by one client
 * each, first with the service otherwise idle, then while one app floods it with 500 concurrent
 * ViewAllFiles of a 5,000-file bucket (bench/flood.ts, its own process). Their p99 side by side,
 * and what became of the flood's requests: each is a whole answer or a refusal with Retry-After.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Client } from 'undici';
import { hashSecret, randomSecret } from '../../src/services/secret-hashing.js';
import type { FloodTotals } from '../flood.js';
import { fmt } from '../format.js';
import { callJson } from '../load.js';
import { startChild } from '../processes.js';
import { serviceName, type Context, type ServiceRun } from './common.js';

const FLOOD_CLIENTS = 500;
const FLOOD_FILES = 5_000;
const TARGETS_MS = { ViewOneFile: 250, health: 100 } as const;
const FLOOD_SCRIPT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../flood.js');

type Probe = keyof typeof TARGETS_MS;

/** The service's database: its PostgreSQL database, or the embedded server's socket under DATA_DIR. */
function databaseOf(run: ServiceRun): pg.PoolConfig | undefined {
  if (run.setup.databaseUrl) return { connectionString: run.setup.databaseUrl, max: 2 };
  const socketDir = path.join(run.setup.dataDir, 'postgres-socket');
  if (!existsSync(path.join(socketDir, '.s.PGSQL.5432'))) return undefined;
  return { host: socketDir, port: 5432, user: 'postgres', database: 'postgres', max: 2 };
}

/** An app of its own for the flood, with a bucket of FLOOD_FILES rows; the listing reads no bytes. */
async function floodingApp(run: ServiceRun, pool: pg.Pool): Promise<string> {
  const appId = `flood-${randomSecret(6)}`;
  const appSecret = randomSecret(24);
  await pool.query('INSERT INTO apps (app_id, secret_hash) VALUES ($1, $2)', [appId, hashSecret(appSecret)]);
  const token = await callJson(run.instance.origin, '/API/AccessToken', { AppId: appId, AppSecret: appSecret });
  const accessToken = String(token.json.AccessToken);
  const bucket = await callJson(run.instance.origin, '/API/CreateBucket', { AccessToken: accessToken, BucketName: appId, OpenToRead: false, OpenToUpload: false });
  if (bucket.json.Code !== 0) throw new Error(`CreateBucket failed: ${JSON.stringify(bucket.json)}`);
  const bucketId = Number(bucket.json.BucketId);
  await pool.query(
    `INSERT INTO files (bucket_id, real_file_name, file_extension, size_bytes, upload_time, alive_days, expires_at, storage_key, sha256)
     SELECT $1::bigint, 'file-' || i || '.bin', '.bin', i, now(), 30, now() + interval '30 days', md5('flood-' || $1::bigint || '-' || i), ''
     FROM generate_series(1, $2::int) AS i`,
    [bucketId, FLOOD_FILES],
  );
  // Autovacuum is off on the bench machines.
  await pool.query('ANALYZE files');
  await pool.query('ANALYZE buckets');
  return `/API/ViewAllFiles?AccessToken=${accessToken}&BucketId=${bucketId}`;
}

/** A file of the bench's own app (another app than the flood's), for ViewOneFile. */
async function probeFile(run: ServiceRun, pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ file_key: string }>(
    `INSERT INTO files (bucket_id, real_file_name, file_extension, size_bytes, upload_time, alive_days, expires_at, storage_key, sha256)
     VALUES ($1, $2, '.txt', 1, now(), 30, now() + interval '30 days', md5($2), '') RETURNING file_key`,
    [run.instance.bucketId, `probe-${randomSecret(6)}.txt`],
  );
  return Number(rows[0]!.file_key);
}

/** Latencies of `path`, asked one after another on one connection until `stop()`; every answer must be Code 0. */
async function probe(origin: string, path: string, stop: () => boolean): Promise<{ ms: number[]; failures: number }> {
  const client = new Client(origin);
  const ms: number[] = [];
  let failures = 0;
  try {
    while (!stop()) {
      const started = performance.now();
      const response = await client.request({ path, method: 'GET' });
      const body = (await response.body.json()) as { Code?: number };
      ms.push(performance.now() - started);
      if (response.statusCode !== 200 || body.Code !== 0) failures++;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    await client.close();
  }
  return { ms, failures };
}

type Window = Record<Probe, { ms: number[]; failures: number }>;

/** Both probes for as long as `during` runs. */
async function probing(run: ServiceRun, fileKey: number, during: (begin: () => void) => Promise<void>): Promise<Window> {
  let stop = false;
  let probes: Promise<Window> | undefined;
  const begin = () => {
    probes ??= Promise.all([
      probe(run.instance.origin, `/API/ViewOneFile?FileKey=${fileKey}`, () => stop),
      probe(run.instance.origin, '/health', () => stop),
    ]).then(([ViewOneFile, health]) => ({ ViewOneFile, health }));
  };
  try {
    await during(begin);
  } finally {
    stop = true;
  }
  begin();
  return probes!;
}

/** Runs the flood for `seconds`; `begin` is called once its requests are going out. */
async function flood(run: ServiceRun, listing: string, seconds: number, begin: () => void): Promise<FloodTotals> {
  const child = startChild(`flood (${run.instance.db})`, process.execPath, [FLOOD_SCRIPT, run.instance.origin, listing, String(FLOOD_CLIENTS), String(seconds)], {
    PATH: process.env.PATH ?? '',
  });
  let totals: FloodTotals | undefined;
  try {
    for await (const line of createInterface({ input: child.process.stdout! })) {
      if (line === 'flooding') begin();
      else if (line.startsWith('{')) totals = JSON.parse(line) as FloodTotals;
    }
  } finally {
    await child.stop();
  }
  if (!totals) throw new Error(`the flood printed no totals:\n${child.output()}`);
  return totals;
}

function p99(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.99) - 1)] ?? NaN;
}

export async function fairShares(ctx: Context): Promise<void> {
  for (const run of ctx.services) {
    const target = databaseOf(run);
    if (!target) {
      ctx.skipped.push(`fair-shares (${run.setup.db}): the embedded database's socket is not under DATA_DIR, so the bench cannot fill the bucket`);
      continue;
    }
    const pool = new pg.Pool(target);
    try {
      await fairSharesOf(ctx, run, pool);
    } finally {
      await pool.end();
    }
  }
}

async function fairSharesOf(ctx: Context, run: ServiceRun, pool: pg.Pool): Promise<void> {
  const db = run.setup.db;
  const listing = await floodingApp(run, pool);
  const fileKey = await probeFile(run, pool);
  // Long enough for a p99 of a few hundred probes even when each takes a while.
  const seconds = ctx.opts.mode === 'quick' ? 5 : 15;
  const quiet = await probing(run, fileKey, async (begin) => {
    begin();
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  });
  let totals: FloodTotals | undefined;
  const flooded = await probing(run, fileKey, async (begin) => {
    totals = await flood(run, listing, seconds, begin);
  });
  const outcome = totals!;

  const rows: string[] = [];
  for (const probe of ['ViewOneFile', 'health'] as const) {
    const name = probe === 'health' ? 'GET /health' : "another app's ViewOneFile";
    const alone = p99(quiet[probe].ms);
    const during = p99(flooded[probe].ms);
    for (const [window, value, count] of [['alone', alone, quiet[probe].ms.length], ['during the flood', during, flooded[probe].ms.length]] as const) {
      ctx.metrics.push({ caseId: 'fair-shares', variant: `${serviceName(run)} ${name} p99, ${window}`, unit: 'ms', samples: [value], median: value, extra: `${count} requests` });
    }
    ctx.log(`  fair-shares  ${name}: p99 ${fmt(alone, 1)} ms alone (${quiet[probe].ms.length}), ${fmt(during, 1)} ms during the flood (${flooded[probe].ms.length}, max ${fmt(Math.max(...flooded[probe].ms), 0)} ms)`);
    const limit = TARGETS_MS[probe];
    rows.push(`| ${name} | ${fmt(alone, 1)} ms | ${fmt(during, 1)} ms | < ${limit} ms | ${during < limit ? 'pass' : 'MISS'} |`);
    ctx.checks.push({
      name: `fair-shares: every ${name} answered Code 0, alone and during the flood`,
      db,
      ok: quiet[probe].failures === 0 && flooded[probe].failures === 0,
      detail: `${quiet[probe].failures + flooded[probe].failures} of ${quiet[probe].ms.length + flooded[probe].ms.length} failed`,
    });
  }
  ctx.log(`  fair-shares  flood: ${outcome.whole} whole answers, ${outcome.refused} refusals with Retry-After, ${outcome.failed} failed ${JSON.stringify(outcome.problems)}`);
  ctx.checks.push({
    name: `fair-shares: each of the flood's ViewAllFiles got its whole ${FLOOD_FILES}-file answer or a refusal with Retry-After`,
    db,
    ok: outcome.failed === 0 && outcome.whole > 0,
    detail: `${outcome.whole} whole, ${outcome.refused} refused, ${outcome.failed} failed`,
  });
  ctx.findings.push({
    title: `Fair shares [${db}]`,
    text: [
      `${FLOOD_CLIENTS} clients of one app sending ViewAllFiles of a ${FLOOD_FILES}-file bucket back to back for ${seconds} s (a refusal's Retry-After waited out): ${outcome.whole} whole answers, ${outcome.refused} refusals.`,
      '',
      '| p99 | Alone | During the flood | Target | Result |',
      '|---|---:|---:|---:|---|',
      ...rows,
    ].join('\n'),
  });
}
