/** memory: the peak RSS of a fresh service process under several large uploads at once. */
import { callJson, newClient } from '../load.js';
import { fmt, sizeLabel } from '../format.js';
import { descendantsOf, memoryOf, pssOf } from '../processes.js';
import { prepareService, startService } from '../service.js';
import { MEMORY_LIMIT, type Context, type ServiceRun, type StoredFile } from './common.js';
import { uploadToService } from './uploads.js';


/**
 * The peak of the service process that ran the other cases: VmHWM over its whole life (every
 * upload, download and metadata load of the run), before it is stopped, with the cases that took
 * it highest where the peak could be reset between cases.
 */
export async function memoryOverTheRun(ctx: Context, run: ServiceRun, cases: readonly string[]): Promise<void> {
  const ready = run.readyHwm ?? NaN;
  const peak = Math.max(memoryOf(run.instance.child.pid)?.hwm ?? 0, ...run.casePeaks.values()) || NaN;
  const highest = [...run.casePeaks].sort((a, b) => b[1] - a[1]).slice(0, 3);
  const byCase = highest.length > 0 ? `; highest during ${highest.map(([name, hwm]) => `${name} ${fmt(hwm / 1e6)} MB`).join(', ')}` : '';
  ctx.memory.push({
    db: run.setup.db,
    title: 'Peak RSS of the service that ran the cases',
    idleBytes: ready,
    peakBytes: peak,
    limitBytes: MEMORY_LIMIT,
    pass: peak < MEMORY_LIMIT,
    detail: `VmHWM ${fmt(ready / 1e6)} MB when ready, ${fmt(peak / 1e6)} MB after ${cases.join(', ')}${byCase}`,
    database: run.dbPids ? pssOf(await run.dbPids()) : undefined,
  });
  ctx.log(`  memory  service (${run.setup.db}) over the run: ready ${fmt(ready / 1e6)} MB, peak ${fmt(peak / 1e6)} MB${byCase}`);
}

/** A fresh service process; its peak RSS (VmHWM) while one large and several medium files upload at once. */
export async function memoryCase(ctx: Context, run: ServiceRun): Promise<void> {
  const { opts } = ctx;
  const db = run.setup.db;
  const title = `Peak RSS, ${sizeLabel(opts.memoryLargeSize)} + ${opts.memorySmallCount} × ${sizeLabel(opts.memorySmallSize)} uploads at once`;
  const started = await startService({ ...run.setup, cpuProfDir: undefined });
  try {
    const instance = await prepareService(run.setup, started, { bucketId: run.instance.bucketId, bucketName: run.instance.bucketName });
    const fresh: ServiceRun = { ...run, instance };
    const idle = memoryOf(started.child.pid);
    let sampledPeak = 0;
    const timer = setInterval(() => {
      sampledPeak = Math.max(sampledPeak, memoryOf(started.child.pid)?.rss ?? 0);
    }, 100);
    const sizes = [opts.memoryLargeSize, ...Array.from({ length: opts.memorySmallCount }, () => opts.memorySmallSize)];
    const t0 = performance.now();
    let files: StoredFile[];
    try {
      files = await Promise.all(
        sizes.map(async (size) => {
          const client = newClient(instance.origin);
          try {
            return await uploadToService(client, fresh, 'large', size);
          } finally {
            await client.close();
          }
        }),
      );
    } finally {
      clearInterval(timer);
    }
    const seconds = (performance.now() - t0) / 1000;
    const after = memoryOf(started.child.pid);
    const view = await callJson(instance.origin, `/API/ViewMultiFiles?Ids=${files.map((file) => file.key).join(',')}`);
    const stored = (view.json.Items as Array<{ FileKey: number; JFileSize: number }> | undefined) ?? [];
    const sizesOk = files.every((file) => stored.find((item) => item.FileKey === file.key)?.JFileSize === file.size);
    ctx.checks.push({
      name: 'memory case: every upload stored with its size',
      db,
      ok: sizesOk,
      detail: sizesOk ? `${files.length} files, ${sizeLabel(sizes.reduce((a, b) => a + b, 0))} in ${fmt(seconds, 1)} s` : JSON.stringify(stored).slice(0, 200),
    });
    const peak = after?.hwm ?? NaN;
    ctx.memory.push({
      db,
      title,
      idleBytes: idle?.hwm ?? NaN,
      peakBytes: peak,
      limitBytes: MEMORY_LIMIT,
      pass: peak < MEMORY_LIMIT,
      detail: `VmHWM ${fmt((idle?.hwm ?? NaN) / 1e6)} MB when ready, ${fmt(peak / 1e6)} MB after the uploads (sampled VmRSS peak ${fmt(sampledPeak / 1e6)} MB)`,
      database: pssOf(run.setup.db === 'embedded' ? descendantsOf(started.child.pid) : ((await run.dbPids?.()) ?? [])),
    });
    ctx.log(`  memory  service (${db}): ready ${fmt((idle?.hwm ?? NaN) / 1e6)} MB, peak ${fmt(peak / 1e6)} MB`);
    // Free the disk at once: several GiB.
    for (const file of files) {
      await callJson(instance.origin, '/API/DeleteFile', { AccessToken: instance.token, FileKey: file.key });
    }
  } finally {
    await started.child.stop();
  }
}
