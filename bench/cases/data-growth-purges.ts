/**
 * The purges of data-growth's largest bucket: DeleteBucket of it, and the sweeps of an instance
 * emptying a bucket of as many expired files. Each is timed while 8 clients keep reading another
 * bucket, whose latencies show what the purge costs everyone else.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { Client } from 'undici';
import { startService } from '../service.js';
import type { ServiceRun } from './common.js';

export interface Purge {
  seconds: number;
  requests: number;
  failures: number;
  p99Ms: number;
  maxMs: number;
}

/** Other requests meet every purge from this bucket: ViewOneFile of its files and its ViewBucketDetail. */
export interface ProbeBucket {
  bucketId: number;
  keys: number[];
}

/** Longer than any purge should take; a purge still running then fails the case rather than hang it. */
const PURGE_LIMIT_MS = 10 * 60_000;

/** Runs `purge` while 8 clients read `probe` on the service, and returns how long it took and their latencies. */
async function whileReading(run: ServiceRun, probe: ProbeBucket, purge: () => Promise<void>): Promise<Purge> {
  const latencies: number[] = [];
  let failures = 0;
  let done = false;
  const readers = Array.from({ length: 8 }, async (_, worker) => {
    const client = new Client(run.instance.origin);
    try {
      for (let i = 0; !done; i++) {
        const path = i % 2 === 0 ? `/API/ViewOneFile?FileKey=${probe.keys[(worker + i) % probe.keys.length]}` : `/API/ViewBucketDetail?BucketId=${probe.bucketId}`;
        const t0 = performance.now();
        const response = await client.request({ path, method: 'GET' });
        const body = (await response.body.json()) as { Code?: number };
        latencies.push(performance.now() - t0);
        if (response.statusCode !== 200 || body.Code !== 0) failures++;
      }
    } finally {
      await client.close();
    }
  });
  const started = performance.now();
  try {
    await purge();
  } finally {
    done = true;
  }
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(readers);
  latencies.sort((a, b) => a - b);
  return {
    seconds,
    requests: latencies.length,
    failures,
    p99Ms: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? NaN,
    maxMs: latencies[latencies.length - 1] ?? NaN,
  };
}

/** DeleteBucket of the whole bucket; it answers once every file is gone. */
export async function deleteBucket(run: ServiceRun, bucketId: number, probe: ProbeBucket): Promise<Purge> {
  return whileReading(run, probe, async () => {
    const client = new Client(run.instance.origin, { headersTimeout: PURGE_LIMIT_MS, bodyTimeout: PURGE_LIMIT_MS });
    try {
      const response = await client.request({
        path: '/API/DeleteBucket',
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ AccessToken: run.instance.token, BucketId: String(bucketId) }).toString(),
      });
      const body = (await response.body.json()) as { Code?: number; Message?: string };
      if (body.Code !== 0) throw new Error(`DeleteBucket answered ${JSON.stringify(body)}`);
    } finally {
      await client.close();
    }
  });
}

/**
 * A second instance on the same database and storage, with SWEEP_INTERVAL_SECONDS=1, runs its
 * expiry and orphan sweeps until the bucket of expired files has no row left; the readers use the
 * first instance, as a fleet's other requests would. The time counts from the second instance's
 * start, so it includes up to a second before its first sweep.
 */
export async function sweepExpired(run: ServiceRun, pool: pg.Pool, bucketId: number, probe: ProbeBucket): Promise<Purge> {
  return whileReading(run, probe, async () => {
    const sweeper = await startService({ ...run.setup, cpuProfDir: undefined, extraEnv: { ...run.setup.extraEnv, SWEEP_INTERVAL_SECONDS: '1' } });
    try {
      const deadline = performance.now() + PURGE_LIMIT_MS;
      for (;;) {
        const { rows } = await pool.query<{ left: boolean }>('SELECT EXISTS (SELECT 1 FROM files WHERE bucket_id = $1) AS left', [bucketId]);
        if (!rows[0]!.left) return;
        if (performance.now() > deadline) throw new Error(`the sweeps left expired files in bucket ${bucketId} after ${PURGE_LIMIT_MS / 1000} s`);
        await sleep(250);
      }
    } finally {
      await sweeper.child.stop();
    }
  });
}
