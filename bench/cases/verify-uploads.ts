/** Check: every upload reads back with the sha256 of what was sent. */
import { contentSha256, download, newClient } from '../load.js';
import { serviceName, type Context, type StoredFile } from './common.js';

/** Downloads every large and 1 MiB upload and a sample of the 1 KiB ones, and checks their sha256. */
export async function verifyUploads(ctx: Context): Promise<void> {
  for (const run of ctx.services) {
    const { ledger, instance } = run;
    const kib = sample(ledger.files.kib, ctx.opts.kibSample);
    const jobs: Array<{ file: StoredFile; path: string }> = [
      ...ledger.files.large.map((file) => ({ file, path: `/Download/FromKey/${file.key}` })),
      // The 1 MiB files by their InternetPath, the others by key: both routes are checked.
      ...ledger.files.mib.map((file) => ({ file, path: file.path })),
      ...kib.map((file) => ({ file, path: `/Download/FromKey/${file.key}` })),
    ];
    if (jobs.length === 0) continue;
    let ok = 0;
    const bad: string[] = [];
    let next = 0;
    const worker = async () => {
      const client = newClient(instance.origin);
      try {
        while (next < jobs.length) {
          const { file, path } = jobs[next++]!;
          const reply = await download(client, path, { hash: true });
          if (reply.status === 200) ledger.counted(file.key);
          if (reply.status === 200 && reply.sha256 === contentSha256(file.seed, file.size)) ok++;
          else bad.push(`${path}: HTTP ${reply.status}, ${reply.bytes} bytes`);
        }
      } finally {
        await client.close();
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    const counts = `${ledger.files.large.length} large, ${ledger.files.mib.length} of 1 MiB, ${kib.length} of ${ledger.files.kib.length} of 1 KiB`;
    ctx.checks.push({
      name: 'sha256 of uploads, checked on download',
      db: instance.db,
      ok: bad.length === 0,
      detail: bad.length === 0 ? `${ok} files match (${counts})` : `${bad.length} of ${jobs.length} differ, e.g. ${bad.slice(0, 3).join('; ')}`,
    });
    ctx.log(`  verify  ${serviceName(run)}: ${ok}/${jobs.length} sha256 match`);
  }
}

function sample<T>(items: readonly T[], count: number): T[] {
  if (items.length <= count) return [...items];
  const step = items.length / count;
  return Array.from({ length: count }, (_, i) => items[Math.floor(i * step)]!);
}
