/** download-1m: 1 MiB files, 8 concurrent, beside the bare download server and nginx. */
import { closedLoop, download, MiB } from '../load.js';
import { measure, type Outcome } from '../measure.js';
import type { Context } from './common.js';
import { downloadComparisons, downloadVariants, SET_SIZE, type ServiceReads } from './downloads.js';

export async function download1m(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const loop = (origin: string, paths: string[], service?: ServiceReads) => async (warmup: boolean): Promise<Outcome> => {
    let next = 0;
    const result = await closedLoop({
      origin,
      concurrency: 8,
      durationMs: warmup ? opts.warmupMs : opts.durationMs,
      op: async (client) => {
        const index = next++ % paths.length;
        const reply = await download(client, paths[index]!);
        if (reply.status !== 200 || reply.bytes !== MiB) throw new Error(`GET ${paths[index]}: HTTP ${reply.status}, ${reply.bytes} bytes`);
        service?.counted(index);
        return reply.bytes;
      },
    });
    if (result.failures > 0) throw new Error(`${result.failures} downloads failed, first: ${result.firstFailure}`);
    return { value: result.ops / result.seconds, secondary: result.bytes / MiB / result.seconds };
  };
  const variants = await downloadVariants(ctx, {
    kind: 'mib',
    size: MiB,
    count: SET_SIZE,
    unit: 'files/s',
    secondaryUnit: 'MiB/s',
    // By InternetPath: /<BucketName>/<RealFileName>.
    servicePath: (file) => file.path,
    staticNames: ctx.staticSet.mib,
    read: loop,
  });
  const metrics = await measure(ctx, 'download-1m', variants);
  downloadComparisons(ctx, 'download-1m', 'Download 1 MiB files, 8 concurrent', metrics, 0.8);
}
