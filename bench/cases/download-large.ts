/** download-large: one large file, one stream, beside the bare download server and nginx. */
import { download, MiB, newClient } from '../load.js';
import { measure, type Outcome, type Variant } from '../measure.js';
import { sizeLabel } from '../format.js';
import { serviceName, type Context } from './common.js';
import { downloadComparisons, prepareDownloads, staticVariants, warmCache } from './downloads.js';

export async function downloadLarge(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const sets = await prepareDownloads(ctx, 'large', opts.largeSize, 1);
  const single = (origin: string, path: string, onDone?: () => void) => async (): Promise<Outcome> => {
    const client = newClient(origin);
    const started = performance.now();
    try {
      const reply = await download(client, path);
      if (reply.status !== 200 || reply.bytes !== opts.largeSize) throw new Error(`GET ${path}: HTTP ${reply.status}, ${reply.bytes} bytes`);
      onDone?.();
    } finally {
      await client.close();
    }
    return { value: opts.largeSize / MiB / ((performance.now() - started) / 1000) };
  };
  const variants: Variant[] = [
    ...[...sets].map(([run, [file]]) => ({
      name: serviceName(run),
      pid: run.instance.child.pid,
      dbPids: run.dbPids,
      unit: 'MiB/s',
      prepare: warmCache(run.instance.origin, [`/Download/FromKey/${file!.key}`], () => run.ledger.counted(file!.key)),
      run: single(run.instance.origin, `/Download/FromKey/${file!.key}`, () => run.ledger.counted(file!.key)),
    })),
    ...staticVariants(ctx, (endpoint) => ({
      name: endpoint.name,
      pid: endpoint.pid,
      unit: 'MiB/s',
      prepare: warmCache(endpoint.origin, [`/${ctx.staticSet.large}`]),
      run: single(endpoint.origin, `/${ctx.staticSet.large}`),
    })),
  ];
  const metrics = await measure(ctx, 'download-large', variants);
  downloadComparisons(ctx, 'download-large', `Download ${sizeLabel(opts.largeSize)}, 1 stream`, metrics, 0.9);
}
