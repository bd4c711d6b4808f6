/** upload-large: one large file, one stream, against the bare upload server without and with fsync. */
import { MiB, newClient } from '../load.js';
import { compare, type Outcome } from '../measure.js';
import { fmt, formatValue, sizeLabel } from '../format.js';
import type { Metric } from '../results.js';
import { serviceName, type Context } from './common.js';
import { measureUploads, uploadVariants, type Send } from './uploads.js';

export async function uploadLarge(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const single = (origin: string, send: Send) => {
    return async (warmup: boolean): Promise<Outcome> => {
      const size = warmup ? opts.warmLargeSize : opts.largeSize;
      const client = newClient(origin);
      const started = performance.now();
      let afterLastByteMs: number | undefined;
      try {
        ({ afterLastByteMs } = await send(client, size));
      } finally {
        await client.close();
      }
      const seconds = (performance.now() - started) / 1000;
      // Secondary: how long the answer took after the last byte (the fsync and commit at the end).
      return { value: size / MiB / seconds, secondary: afterLastByteMs === undefined ? undefined : afterLastByteMs / 1000 };
    };
  };
  const variants = uploadVariants(ctx, 'large', { unit: 'MiB/s', secondaryUnit: 's after the last byte' }, single);
  const metrics = await measureUploads(ctx, 'upload-large', variants);
  const title = `Upload ${sizeLabel(opts.largeSize)}, 1 stream`;
  const bare = metrics.get('bare node:http')!;
  const durable = metrics.get('bare node:http + fsync')!;
  for (const run of ctx.services) {
    const subject = metrics.get(serviceName(run))!;
    compare(ctx, { caseId: 'upload-large', title, db: run.instance.db, subject, baseline: durable, target: 0.9 });
    compare(ctx, { caseId: 'upload-large', title, db: run.instance.db, subject, baseline: bare });
    ctx.findings.push({ title: `Where the ${sizeLabel(opts.largeSize)} upload's time goes (${run.instance.db})`, text: largeUploadSplit(opts.largeSize, subject, bare, durable) });
  }
}

/** Splits an upload's time into receiving the body and finishing after its last byte (fsync, rename, commit). */
function largeUploadSplit(size: number, service: Metric, bare: Metric, durable: Metric): string {
  const split = (m: Metric) => {
    const total = size / MiB / m.median;
    const tail = m.secondary ?? 0;
    return { total, tail, receiving: size / MiB / Math.max(total - tail, 1e-6) };
  };
  const s = split(service);
  const b = split(bare);
  const d = split(durable);
  return (
    `The service takes ${fmt(s.total, 2)} s: ${fmt(s.total - s.tail, 2)} s receiving (${formatValue(s.receiving, 'MiB/s')}; ` +
    `the bare server receives at ${formatValue(b.receiving, 'MiB/s')}) and ${fmt(s.tail, 2)} s after the last byte ` +
    `(fsync, rename, row; the bare server with fsync needs ${fmt(d.tail, 2)} s, without ${fmt(b.tail, 2)} s). ` +
    `Server CPU while uploading: service ${fmt(service.cores ?? NaN, 2)} cores, bare ${fmt(bare.cores ?? NaN, 2)} cores.`
  );
}
