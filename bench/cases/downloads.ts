/** What the download cases share: the files to read, the baselines beside the service, and their ratios. */
import { download, newClient } from '../load.js';
import { compare, type Variant } from '../measure.js';
import type { Metric } from '../results.js';
import { serviceName, type CaseId, type Context, type FileKind, type ServiceRun, type StoredFile } from './common.js';
import { ensureFiles } from './uploads.js';

export const SET_SIZE = 64;

/** A service's side of a download run: what to count as downloaded. */
export interface ServiceReads {
  run: ServiceRun;
  files: StoredFile[];
  /** Counts a completed download of files[index]. */
  counted(index: number): void;
}

/**
 * The variants of a download case: each service reading `count` files of `size` (uploaded first
 * when no upload case left them) by `servicePath`, then the bare download server and, when
 * installed, nginx reading the static files of the same size. Every run reads its set once
 * before (warmCache). `read` makes a variant's run from where it reads; `service` is given for
 * the service's variants.
 */
export async function downloadVariants(
  ctx: Context,
  input: {
    kind: FileKind;
    size: number;
    count: number;
    unit: string;
    secondaryUnit?: string;
    servicePath(file: StoredFile): string;
    staticNames: readonly string[];
    read(origin: string, paths: string[], service?: ServiceReads): Variant['run'];
  },
): Promise<Variant[]> {
  const { unit, secondaryUnit, read } = input;
  const variants: Variant[] = [];
  for (const run of ctx.services) {
    const files = await ensureFiles(run, input.kind, input.size, input.count);
    const paths = files.map(input.servicePath);
    const counted = (index: number) => run.ledger.counted(files[index]!.key);
    variants.push({
      name: serviceName(run),
      pid: run.instance.child.pid,
      dbPids: run.dbPids,
      unit,
      secondaryUnit,
      prepare: warmCache(run.instance.origin, paths, counted),
      run: read(run.instance.origin, paths, { run, files, counted }),
    });
  }
  const { download, nginx } = ctx.baselines;
  const staticPaths = input.staticNames.map((name) => `/${name}`);
  for (const endpoint of [download, ...(nginx ? [nginx] : [])]) {
    variants.push({
      name: endpoint.name,
      pid: endpoint.pid,
      unit,
      secondaryUnit,
      prepare: warmCache(endpoint.origin, staticPaths),
      run: read(endpoint.origin, staticPaths),
    });
  }
  return variants;
}

/**
 * Reads every file of a set once, untimed, so that each run starts from the page cache. Some
 * machines evict idle page cache within seconds (e.g. a VM under DAMON-based reclaim); without
 * this, a run would measure the disk or the cache depending on when the file was last read.
 */
function warmCache(origin: string, paths: readonly string[], onDone?: (index: number) => void): () => Promise<void> {
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
