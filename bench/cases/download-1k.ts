/** download-1k: 1 KiB files, 64 concurrent (autocannon), beside the bare download server and nginx. */
import { cannon, KiB } from '../load.js';
import { measure, type Outcome } from '../measure.js';
import type { Context } from './common.js';
import { downloadComparisons, downloadVariants, SET_SIZE, type ServiceReads } from './downloads.js';

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
  const variants = await downloadVariants(ctx, {
    kind: 'kib',
    size: KiB,
    count: SET_SIZE,
    unit: 'req/s',
    servicePath: (file) => `/Download/FromKey/${file.key}`,
    staticNames: ctx.staticSet.kib,
    read: burst,
  });
  const metrics = await measure(ctx, 'download-1k', variants);
  downloadComparisons(ctx, 'download-1k', 'Download 1 KiB files, 64 concurrent', metrics, 0.8, 'download counter on');
}
