/**
 * upload-1m: 1 MiB files, 8 concurrent, against the bare upload server without and with fsync, and
 * the durable upload floor (the same durable write plus the upload's row).
 */
import { MiB } from '../load.js';
import { compare } from '../measure.js';
import { serviceName, type Context } from './common.js';
import { durableFloorName, uploadMany } from './uploads.js';

export async function upload1m(ctx: Context): Promise<void> {
  const metrics = await uploadMany(ctx, 'upload-1m', 'mib', MiB, 8);
  for (const run of ctx.services) {
    const subject = metrics.get(serviceName(run));
    const title = 'Upload 1 MiB files, 8 concurrent';
    compare(ctx, { caseId: 'upload-1m', title, db: run.instance.db, subject, baseline: metrics.get('bare node:http + fsync'), target: 0.8 });
    compare(ctx, { caseId: 'upload-1m', title, db: run.instance.db, subject, baseline: metrics.get('bare node:http') });
    compare(ctx, { caseId: 'upload-1m', title, db: run.instance.db, subject, baseline: metrics.get(durableFloorName(run)) });
  }
}
