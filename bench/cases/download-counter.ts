/** Check: the service's download counter against the downloads the bench completed. */
import { callJson } from '../load.js';
import { fmt } from '../format.js';
import { serviceName, type Context } from './common.js';

/** After the flush interval, DownloadTimes must equal the downloads the client completed. */
export async function checkCounters(ctx: Context): Promise<void> {
  const runs = ctx.services.filter((run) => run.ledger.downloads.size > 0 || run.ledger.bulk.length > 0);
  if (runs.length === 0) return;
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  for (const run of runs) {
    const { ledger, instance } = run;
    const keys = [...new Set([...ledger.downloads.keys(), ...ledger.bulk.flatMap((entry) => entry.keys)])];
    const seen = new Map<number, number>();
    for (let i = 0; i < keys.length; i += 500) {
      const ids = keys.slice(i, i + 500).join(',');
      const reply = await callJson(instance.origin, `/API/ViewMultiFiles?Ids=${ids}`);
      for (const item of (reply.json.Items as Array<{ FileKey: number; DownloadTimes: number }> | undefined) ?? []) {
        seen.set(item.FileKey, item.DownloadTimes);
      }
    }
    const bulkKeys = new Set(ledger.bulk.flatMap((entry) => entry.keys));
    const wrong: string[] = [];
    let expectedTotal = 0;
    // Keys downloaded only one by one: exact per file.
    for (const [key, count] of ledger.downloads) {
      expectedTotal += count;
      if (!bulkKeys.has(key) && seen.get(key) !== count) wrong.push(`FileKey ${key}: ${seen.get(key)} counted, ${count} completed`);
    }
    // Keys autocannon cycled through: exact over the set.
    const bulkExpected =
      ledger.bulk.reduce((sum, entry) => sum + entry.count, 0) +
      [...bulkKeys].reduce((sum, key) => sum + (ledger.downloads.get(key) ?? 0), 0);
    const bulkSeen = [...bulkKeys].reduce((sum, key) => sum + (seen.get(key) ?? 0), 0);
    if (bulkSeen !== bulkExpected) wrong.push(`1 KiB set: ${bulkSeen} counted, ${bulkExpected} completed`);
    expectedTotal += ledger.bulk.reduce((sum, entry) => sum + entry.count, 0);
    ctx.checks.push({
      name: 'DownloadTimes equals completed downloads (after 1.5 s)',
      db: instance.db,
      ok: wrong.length === 0,
      detail: wrong.length === 0 ? `${fmt(expectedTotal)} downloads over ${keys.length} files` : wrong.slice(0, 3).join('; '),
    });
    ctx.log(`  counter  ${serviceName(run)}: ${wrong.length === 0 ? 'ok' : wrong.slice(0, 3).join('; ')}`);
  }
}
