/** What the download cases share: the files to read, the baselines beside the service, and their ratios. */
import { download, newClient } from '../load.js';
import { compare, type Variant } from '../measure.js';
import type { Metric } from '../results.js';
import { serviceName, type CaseId, type Context, type Endpoint, type FileKind, type ServiceRun, type StoredFile } from './common.js';
import { ensureFiles } from './uploads.js';

export const SET_SIZE = 64;

export function staticVariants(ctx: Context, make: (endpoint: Endpoint) => Variant): Variant[] {
  const { download, nginx } = ctx.baselines;
  return [make(download), ...(nginx ? [make(nginx)] : [])];
}

export async function prepareDownloads(ctx: Context, kind: FileKind, size: number, count: number): Promise<Map<ServiceRun, StoredFile[]>> {
  const sets = new Map<ServiceRun, StoredFile[]>();
  for (const run of ctx.services) sets.set(run, await ensureFiles(run, kind, size, count));
  return sets;
}

/**
 * Reads every file of a set once, untimed, so that each run starts from the page cache. Some
 * machines evict idle page cache within seconds (e.g. a VM under DAMON-based reclaim); without
 * this, a run would measure the disk or the cache depending on when the file was last read.
 */
export function warmCache(origin: string, paths: readonly string[], onDone?: (index: number) => void): () => Promise<void> {
  return async () => {
    const client = newClient(origin);
    try {
      for (let index = 0; index < paths.length; index++) {
        const reply = await download(client, paths[index]!);
        if (reply.status !== 200) throw new Error(`GET ${paths[index]}: HTTP ${reply.status}`);
        onDone?.(index);
      }
    } finally {
      await client.close();
    }
  };
}

export function downloadComparisons(ctx: Context, caseId: CaseId, title: string, metrics: Map<string, Metric>, target?: number, note?: string): void {
  for (const run of ctx.services) {
    const subject = metrics.get(serviceName(run));
    compare(ctx, { caseId, title, db: run.instance.db, subject, baseline: metrics.get(ctx.baselines.download.name), target, note });
    if (ctx.baselines.nginx) compare(ctx, { caseId, title, db: run.instance.db, subject, baseline: metrics.get(ctx.baselines.nginx.name) });
  }
}
