/** download-1m: 1 MiB files, 8 concurrent, beside the bare download server and nginx. */
import { closedLoop, download, MiB } from '../load.js';
import { measure, type Outcome, type Variant } from '../measure.js';
import { serviceName, type Context } from './common.js';
import { downloadComparisons, prepareDownloads, SET_SIZE, staticVariants, warmCache } from './downloads.js';

export async function download1m(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const sets = await prepareDownloads(ctx, 'mib', MiB, SET_SIZE);
  const loop = (origin: string, paths: string[], onDone?: (index: number) => void) => async (warmup: boolean): Promise<Outcome> => {
    let next = 0;
    const result = await closedLoop({
      origin,
      concurrency: 8,
      durationMs: warmup ? opts.warmupMs : opts.durationMs,
      op: async (client) => {
        const index = next++ % paths.length;
        const reply = await download(client, paths[index]!);
        if (reply.status !== 200 || reply.bytes !== MiB) throw new Error(`GET ${paths[index]}: HTTP ${reply.status}, ${reply.bytes} bytes`);
        onDone?.(index);
        return reply.bytes;
      },
    });
    if (result.failures > 0) throw new Error(`${result.failures} downloads failed, first: ${result.firstFailure}`);
    return { value: result.ops / result.seconds, secondary: result.bytes / MiB / result.seconds };
  };
  const variants: Variant[] = [
    ...[...sets].map(([run, files]) => ({
      name: serviceName(run),
      pid: run.instance.child.pid,
      dbPids: run.dbPids,
      unit: 'files/s',
      secondaryUnit: 'MiB/s',
      // By InternetPath: /<BucketName>/<RealFileName>.
      prepare: warmCache(run.instance.origin, files.map((file) => file.path), (index) => run.ledger.counted(files[index]!.key)),
      run: loop(run.instance.origin, files.map((file) => file.path), (index) => run.ledger.counted(files[index]!.key)),
    })),
    ...staticVariants(ctx, (endpoint) => ({
      name: endpoint.name,
      pid: endpoint.pid,
      unit: 'files/s',
      secondaryUnit: 'MiB/s',
      prepare: warmCache(endpoint.origin, ctx.staticSet.mib.map((name) => `/${name}`)),
      run: loop(endpoint.origin, ctx.staticSet.mib.map((name) => `/${name}`)),
    })),
  ];
  const metrics = await measure(ctx, 'download-1m', variants);
  downloadComparisons(ctx, 'download-1m', 'Download 1 MiB files, 8 concurrent', metrics);
}
