/** download-1k: 1 KiB files, 64 concurrent (autocannon), beside the bare download server and nginx. */
import { cannon, KiB } from '../load.js';
import { measure, type Outcome, type Variant } from '../measure.js';
import { serviceName, type Context } from './common.js';
import { downloadComparisons, prepareDownloads, SET_SIZE, staticVariants, warmCache } from './downloads.js';

export async function download1k(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const sets = await prepareDownloads(ctx, 'kib', KiB, SET_SIZE);
  const warmAmount = opts.mode === 'quick' ? 2_000 : 5_000;
  const burst = (origin: string, paths: string[], keys?: number[]) => {
    let rate = 0;
    return async (warmup: boolean): Promise<Outcome> => {
      // A fixed number of requests, sized from the warm-up's rate: every response completes, so the
      // service's download counter can be checked against an exact total.
      const amount = warmup ? warmAmount : Math.max(1_000, Math.round((rate * opts.durationMs) / 1000));
      const result = await cannon({ origin, paths, connections: 64, amount });
      if (keys) ctx.services.find((run) => run.instance.origin === origin)!.ledger.bulk.push({ keys, count: result.ok });
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers and ${result.errors} errors`);
      if (warmup) rate = result.rps;
      return { value: result.rps };
    };
  };
  const variants: Variant[] = [
    ...[...sets].map(([run, files]) => ({
      name: serviceName(run),
      pid: run.instance.child.pid,
      dbPids: run.dbPids,
      unit: 'req/s',
      prepare: warmCache(run.instance.origin, files.map((file) => `/Download/FromKey/${file.key}`), (index) => run.ledger.counted(files[index]!.key)),
      run: burst(run.instance.origin, files.map((file) => `/Download/FromKey/${file.key}`), files.map((file) => file.key)),
    })),
    ...staticVariants(ctx, (endpoint) => ({
      name: endpoint.name,
      pid: endpoint.pid,
      unit: 'req/s',
      prepare: warmCache(endpoint.origin, ctx.staticSet.kib.map((name) => `/${name}`)),
      run: burst(endpoint.origin, ctx.staticSet.kib.map((name) => `/${name}`)),
    })),
  ];
  const metrics = await measure(ctx, 'download-1k', variants);
  downloadComparisons(ctx, 'download-1k', 'Download 1 KiB files, 64 concurrent', metrics, 0.6, 'download counter on');
}
