/**
 * download-large: one large file, one stream, beside the bare download server and nginx; and the
 * service and the bare server again read by curl, so that the bench's own client is not the limit.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { download, MiB, newClient } from '../load.js';
import { compare, measure, type Outcome, type Variant } from '../measure.js';
import { sizeLabel } from '../format.js';
import { serviceName, type Context } from './common.js';
import { downloadComparisons, downloadVariants, type ServiceReads } from './downloads.js';

const execFileAsync = promisify(execFile);
const byCurl = (name: string) => `${name}, read by curl`;

async function curlInstalled(): Promise<boolean> {
  return execFileAsync('curl', ['--version']).then(
    () => true,
    () => false,
  );
}

export async function downloadLarge(ctx: Context): Promise<void> {
  const { opts } = ctx;
  const check = (path: string, status: number, bytes: number) => {
    if (status !== 200 || bytes !== opts.largeSize) throw new Error(`GET ${path}: HTTP ${status}, ${bytes} bytes`);
  };
  const single = (origin: string, [path]: string[], service?: ServiceReads) => async (): Promise<Outcome> => {
    const client = newClient(origin);
    const started = performance.now();
    try {
      const reply = await download(client, path!);
      check(path!, reply.status, reply.bytes);
      service?.counted(0);
    } finally {
      await client.close();
    }
    return { value: opts.largeSize / MiB / ((performance.now() - started) / 1000) };
  };
  const curl = (origin: string, [path]: string[], service?: ServiceReads) => async (): Promise<Outcome> => {
    const { stdout } = await execFileAsync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code} %{size_download} %{time_total}', `${origin}${path}`]);
    const [status, bytes, seconds] = stdout.trim().split(' ').map(Number);
    check(path!, status!, bytes!);
    service?.counted(0);
    return { value: opts.largeSize / MiB / seconds! };
  };
  const files = {
    kind: 'large' as const,
    size: opts.largeSize,
    count: 1,
    unit: 'MiB/s',
    servicePath: (file: { key: number }) => `/Download/FromKey/${file.key}`,
    staticNames: [ctx.staticSet.large],
  };
  const variants: Variant[] = await downloadVariants(ctx, { ...files, read: single });
  const curlNames = [...ctx.services.map(serviceName), ctx.baselines.download.name];
  if (await curlInstalled()) {
    const curlVariants = await downloadVariants(ctx, { ...files, read: curl });
    variants.push(...curlVariants.filter((variant) => curlNames.includes(variant.name)).map((variant) => ({ ...variant, name: byCurl(variant.name) })));
  } else {
    ctx.skipped.push('download-large read by curl: curl not installed');
  }
  const metrics = await measure(ctx, 'download-large', variants);
  const title = `Download ${sizeLabel(opts.largeSize)}, 1 stream`;
  downloadComparisons(ctx, 'download-large', title, metrics, 0.95);
  for (const run of ctx.services) {
    const baseline = metrics.get(byCurl(ctx.baselines.download.name));
    compare(ctx, { caseId: 'download-large', title, db: run.instance.db, subject: metrics.get(byCurl(serviceName(run))), baseline, note: 'both read by curl' });
  }
}
