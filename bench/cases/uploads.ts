/**
 * Uploading, shared by the cases: to the service (recorded in its ledger) and, with the same
 * multipart body, to the bare upload server; the concurrent upload cases' common measurement.
 */
import { readdir, truncate } from 'node:fs/promises';
import path from 'node:path';
import type { Client } from 'undici';
import { closedLoop, MiB, multipartForm, newClient, newSeed, postForm } from '../load.js';
import { measure, type Outcome, type Variant } from '../measure.js';
import type { Metric } from '../results.js';
import { serviceName, type CaseId, type Context, type FileKind, type ServiceRun, type StoredFile } from './common.js';

/** Files truncated at once when a case ends. */
const TRUNCATE_BATCH = 64;

export async function uploadToService(client: Client, run: ServiceRun, kind: FileKind, size: number): Promise<StoredFile & { afterLastByteMs?: number }> {
  const { instance } = run;
  const seed = newSeed();
  const form = multipartForm({
    before: { AccessToken: instance.token, BucketId: instance.bucketId },
    after: { AliveDays: 1 },
    fileName: `${kind}-${seed}.bin`,
    size,
  });
  const reply = await postForm(client, '/API/UploadFile', form, seed);
  if (reply.status !== 200 || reply.json.Code !== 0) {
    throw new Error(`UploadFile answered ${reply.status}: ${JSON.stringify(reply.json).slice(0, 300)}`);
  }
  const file = { key: Number(reply.json.FileKey), seed, size, path: new URL(String(reply.json.Path)).pathname };
  run.ledger.files[kind].push(file);
  return { ...file, afterLastByteMs: reply.afterLastByteMs };
}

/** The same multipart body as the service gets (same field lengths), posted to the bare upload server. */
function baselineUploader(ctx: Context) {
  const token = ctx.services[0]?.instance.token ?? 'x'.repeat(43);
  return async (client: Client, size: number, durable: boolean): Promise<{ afterLastByteMs?: number }> => {
    const seed = newSeed();
    const form = multipartForm({
      before: { AccessToken: token, BucketId: 1 },
      after: { AliveDays: 1 },
      fileName: `file-${seed}.bin`,
      size,
    });
    const reply = await postForm(client, `/upload?fsync=${durable ? 1 : 0}`, form, seed);
    if (reply.status !== 200 || reply.json.bytes !== form.length) {
      throw new Error(`bare upload answered ${reply.status}: ${JSON.stringify(reply.json).slice(0, 200)}`);
    }
    return { afterLastByteMs: reply.afterLastByteMs };
  };
}

/** Measures an upload case's variants, then frees the disk space of the bare server's files. */
export async function measureUploads(ctx: Context, caseId: CaseId, variants: Variant[]): Promise<Map<string, Metric>> {
  try {
    return await measure(ctx, caseId, variants);
  } finally {
    await emptyFiles(ctx.uploadDir);
  }
}

/**
 * Truncates every file in `dir` and keeps the files until the run's folder is removed at its end.
 * On ext4 without a journal, a new file avoids inodes freed in the last one to five minutes and
 * scans past each of them: deleting the thousands of files of one case made every file the next
 * case created about ten times slower to create (485 against 38 µs in a probe), the service's and
 * the bare server's alike.
 */
async function emptyFiles(dir: string): Promise<void> {
  const names = await readdir(dir);
  for (let i = 0; i < names.length; i += TRUNCATE_BATCH) {
    await Promise.all(names.slice(i, i + TRUNCATE_BATCH).map((name) => truncate(path.join(dir, name), 0)));
  }
}

/** Sends one upload of `size` on `client`. */
export type Send = (client: Client, size: number) => Promise<{ afterLastByteMs?: number }>;

/**
 * The variants of an upload case: the service on each database, then the bare upload server
 * without and with fsync. `timed` makes a variant's run from where and how it uploads.
 *
 * The bare server keeps its files until the case ends, as the service keeps its own: on this kind
 * of virtual machine, writing into page cache that a deletion has just freed is several times
 * faster than writing into memory the host has taken back, so a side that deletes after each run
 * hands fast pages to whichever run comes next (see Known limits in docs/benchmarks.md).
 */
export function uploadVariants(
  ctx: Context,
  kind: FileKind,
  units: { unit: string; secondaryUnit: string },
  timed: (origin: string, send: Send) => Variant['run'],
): Variant[] {
  const { upload } = ctx.baselines;
  const toBaseline = baselineUploader(ctx);
  const bare = (name: string, durable: boolean): Variant => ({
    name,
    pid: upload.pid,
    ...units,
    run: timed(upload.origin, (client, size) => toBaseline(client, size, durable)),
  });
  return [
    ...ctx.services.map((run) => ({
      name: serviceName(run),
      pid: run.instance.child.pid,
      dbPids: run.dbPids,
      ...units,
      run: timed(run.instance.origin, (client, size) => uploadToService(client, run, kind, size)),
    })),
    bare('bare node:http', false),
    bare('bare node:http + fsync', true),
  ];
}

/** The durable upload floor beside a service: its bytes written durably and its row, nothing else (bench/baselines/db-floor.ts). */
export const durableFloorName = (run: ServiceRun) => `durable upload floor (${run.instance.db})`;

/**
 * Files of `size`, `concurrency` at a time for each run's duration, also to the durable upload
 * floor of each database (not with --quick); `extra` variants join the rotation.
 */
export async function uploadMany(
  ctx: Context,
  caseId: CaseId,
  kind: FileKind,
  size: number,
  concurrency: number,
  extra: Variant[] = [],
): Promise<Map<string, Metric>> {
  const { opts } = ctx;
  const loop = (origin: string, send: Send) => {
    return async (warmup: boolean): Promise<Outcome> => {
      const result = await closedLoop({
        origin,
        concurrency,
        durationMs: warmup ? opts.warmupMs : opts.durationMs,
        op: async (client) => {
          await send(client, size);
          return size;
        },
      });
      if (result.failures > 0) throw new Error(`${result.failures} uploads failed, first: ${result.firstFailure}`);
      return { value: result.ops / result.seconds, secondary: result.bytes / MiB / result.seconds };
    };
  };
  const units = { unit: 'files/s', secondaryUnit: 'MiB/s' };
  const toBaseline = baselineUploader(ctx);
  // Beside the targets, not one of their baselines: --quick leaves it out to stay short.
  const floors = ctx.services.flatMap((run): Variant[] => {
    const floor = run.floor;
    if (!floor || opts.mode === 'quick') return [];
    return [{ name: durableFloorName(run), pid: floor.pid, dbPids: run.dbPids, ...units, run: loop(floor.origin, (client, size) => toBaseline(client, size, true)) }];
  });
  return measureUploads(ctx, caseId, [...uploadVariants(ctx, kind, units, loop), ...floors, ...extra]);
}

/** Makes sure the service holds `count` files of a kind (when the upload cases were left out). */
export async function ensureFiles(run: ServiceRun, kind: FileKind, size: number, count: number): Promise<StoredFile[]> {
  const have = () => run.ledger.files[kind].filter((file) => file.size === size && !run.ledger.deleted.has(file.key));
  let missing = count - have().length;
  if (missing > 0) {
    await Promise.all(
      Array.from({ length: Math.min(4, missing) }, async () => {
        const client = newClient(run.instance.origin);
        try {
          while (missing-- > 0) await uploadToService(client, run, kind, size);
        } finally {
          await client.close();
        }
      }),
    );
  }
  return have().slice(0, count);
}
