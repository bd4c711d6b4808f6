/**
 * metadata: ViewOneFile and ViewMultiFiles, 32 concurrent, beside the metadata floor (the same
 * queries on the same kind of pool in a bare Fastify server, bench/baselines/db-floor.ts) and
 * Fastify's hello-world.
 */
import { callJson, cannon, KiB } from '../load.js';
import { compare, measure, type Outcome, type Variant } from '../measure.js';
import { serviceName, type Context } from './common.js';
import { ensureFiles } from './uploads.js';

/** Six ViewMultiFiles paths of 50 keys each, overlapping. */
function multiPaths(keys: readonly number[]): string[] {
  return [0, 10, 20, 30, 40, 50].map((offset) => `/API/ViewMultiFiles?Ids=${keys.slice(offset, offset + 50).join(',')}`);
}

/**
 * Files for a floor to read, made by its own commit route (its database may be its own): rows only,
 * or with `size` bytes of content each.
 */
export async function floorFiles(origin: string, count: number, size = 0): Promise<number[]> {
  const keys: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(new URL(`/commit?size=${size}`, origin), { method: 'POST' });
    const text = await response.text();
    const fileKey = response.ok ? Number((JSON.parse(text) as { fileKey: unknown }).fileKey) : NaN;
    if (!Number.isInteger(fileKey)) throw new Error(`database floor: /commit answered ${response.status} ${text.slice(0, 200)}`);
    keys.push(fileKey);
  }
  return keys;
}

export async function metadata(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const variants: Variant[] = [];
  const timed = (origin: string, paths: string[]) => async (warmup: boolean): Promise<Outcome> => {
    const result = await cannon({ origin, paths, connections: 32, durationSec: (warmup ? opts.warmupMs : opts.durationMs) / 1000 });
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers and ${result.errors} errors`);
    return { value: result.rps };
  };
  for (const run of ctx.services) {
    const files = await ensureFiles(run, 'kib', KiB, 100);
    const keys = files.map((file) => file.key);
    // One key per connection (autocannon gives connection i the path i).
    const one = keys.slice(0, 32).map((key) => `/API/ViewOneFile?FileKey=${key}`);
    const multi = multiPaths(keys);
    // Answers are HTTP 200 whatever the Code: check one of each before timing them.
    const probeOne = await callJson(run.instance.origin, one[0]!);
    const probeMulti = await callJson(run.instance.origin, multi[0]!);
    const items = (probeMulti.json.Items as unknown[] | undefined)?.length;
    if (probeOne.json.Code !== 0 || probeMulti.json.Code !== 0 || items !== 50) {
      throw new Error(`metadata probe failed: ${JSON.stringify(probeOne.json).slice(0, 200)} / ${items} items`);
    }
    const pid = run.instance.child.pid;
    const dbPids = run.dbPids;
    variants.push(
      { name: `${serviceName(run)} ViewOneFile`, pid, dbPids, unit: 'req/s', run: timed(run.instance.origin, one) },
      { name: `${serviceName(run)} ViewMultiFiles`, pid, dbPids, unit: 'req/s', run: timed(run.instance.origin, multi) },
    );
    const floor = run.floor;
    if (floor) {
      const floorKeys = await floorFiles(floor.origin, 100);
      const floorOne = floorKeys.slice(0, 32).map((key) => `/API/ViewOneFile?FileKey=${key}`);
      variants.push(
        { name: `${floor.name} ViewOneFile`, pid: floor.pid, dbPids, unit: 'req/s', run: timed(floor.origin, floorOne) },
        { name: `${floor.name} ViewMultiFiles`, pid: floor.pid, dbPids, unit: 'req/s', run: timed(floor.origin, multiPaths(floorKeys)) },
      );
    }
  }
  const hello = ctx.baselines.hello;
  variants.push({ name: hello.name, pid: hello.pid, unit: 'req/s', run: timed(hello.origin, ['/']) });
  const metrics = await measure(ctx, 'metadata', variants);
  for (const run of ctx.services) {
    const db = run.instance.db;
    const baseline = metrics.get(hello.name);
    for (const [operation, title] of [
      ['ViewOneFile', 'ViewOneFile, 32 concurrent'],
      ['ViewMultiFiles', 'ViewMultiFiles (50 ids), 32 concurrent'],
    ] as const) {
      const subject = metrics.get(`${serviceName(run)} ${operation}`);
      if (run.floor) compare(ctx, { caseId: 'metadata', title, db, subject, baseline: metrics.get(`${run.floor.name} ${operation}`), target: 0.8 });
      compare(ctx, { caseId: 'metadata', title, db, subject, baseline });
    }
  }
}
