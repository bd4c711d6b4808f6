/**
 * download-1k: 1 KiB files, 64 concurrent (autocannon), beside the small download floor (the same
 * lookup, then open, read and close, in a bare Fastify server: bench/baselines/db-floor.ts), the
 * bare download server and nginx.
 */
import { cannon, KiB } from '../load.js';
import { compare, measure, type Outcome, type Variant } from '../measure.js';
import { floorFiles } from './metadata.js';
import { serviceName, type Context, type ServiceRun } from './common.js';
import { downloadComparisons, downloadVariants, SET_SIZE, type ServiceReads } from './downloads.js';

const TITLE = 'Download 1 KiB files, 64 concurrent';
const floorName = (run: ServiceRun) => `download floor (${run.instance.db})`;

export async function download1k(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const warmAmount = opts.mode === 'quick' ? 2_000 : 5_000;
  const burst = (origin: string, paths: string[], service?: ServiceReads) => {
    const keys = service?.files.map((file) => file.key);
    let rate = 0;
    return async (warmup: boolean): Promise<Outcome> => {
      // A fixed number of requests, sized from the warm-up's rate: every response completes, so the
      // service's download counter can be checked against an exact total.
      const amount = warmup ? warmAmount : Math.max(1_000, Math.round((rate * opts.durationMs) / 1000));
      const result = await cannon({ origin, paths, connections: 64, amount });
      if (service && keys) service.run.ledger.bulk.push({ keys, count: result.ok });
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers and ${result.errors} errors`);
      if (warmup) rate = result.rps;
      return { value: result.rps };
    };
  };
  const variants: Variant[] = await downloadVariants(ctx, {
    kind: 'kib',
    size: KiB,
    count: SET_SIZE,
    unit: 'req/s',
    servicePath: (file) => `/Download/FromKey/${file.key}`,
    staticNames: ctx.staticSet.kib,
    read: burst,
  });
  for (const run of ctx.services) {
    if (!run.floor) continue;
    const keys = await floorFiles(run.floor.origin, SET_SIZE, KiB);
    variants.push({ name: floorName(run), pid: run.floor.pid, dbPids: run.dbPids, unit: 'req/s', run: burst(run.floor.origin, keys.map((key) => `/Download/FromKey/${key}`)) });
  }
  const metrics = await measure(ctx, 'download-1k', variants);
  for (const run of ctx.services) {
    const subject = metrics.get(serviceName(run));
    compare(ctx, { caseId: 'download-1k', title: TITLE, db: run.instance.db, subject, baseline: metrics.get(floorName(run)), target: 0.8, note: 'download counter on' });
  }
  downloadComparisons(ctx, 'download-1k', TITLE, metrics);
}
