/** download-large: one large file, one stream, beside the bare download server and nginx. */
import { download, MiB, newClient } from '../load.js';
import { measure, type Outcome } from '../measure.js';
import { sizeLabel } from '../format.js';
import type { Context } from './common.js';
import { downloadComparisons, downloadVariants, type ServiceReads } from './downloads.js';

export async function downloadLarge(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const single = (origin: string, [path]: string[], service?: ServiceReads) => async (): Promise<Outcome> => {
    const client = newClient(origin);
    const started = performance.now();
    try {
      const reply = await download(client, path!);
      if (reply.status !== 200 || reply.bytes !== opts.largeSize) throw new Error(`GET ${path}: HTTP ${reply.status}, ${reply.bytes} bytes`);
      service?.counted(0);
    } finally {
      await client.close();
    }
    return { value: opts.largeSize / MiB / ((performance.now() - started) / 1000) };
  };
  const variants = await downloadVariants(ctx, {
    kind: 'large',
    size: opts.largeSize,
    count: 1,
    unit: 'MiB/s',
    servicePath: (file) => `/Download/FromKey/${file.key}`,
    staticNames: [ctx.staticSet.large],
    read: single,
  });
  const metrics = await measure(ctx, 'download-large', variants);
  downloadComparisons(ctx, 'download-large', `Download ${sizeLabel(opts.largeSize)}, 1 stream`, metrics, 0.95);
}
