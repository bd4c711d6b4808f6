/**
 * upload-1k: 1 KiB files, 32 concurrent, against the bare upload server without and with fsync,
 * the database floor and the durable upload floor; and what limits them.
 */
import { closedLoop, KiB } from '../load.js';
import { compare, type Outcome, type Variant } from '../measure.js';
import { fmt, formatValue } from '../format.js';
import type { Metric } from '../results.js';
import type { DatabaseKind } from '../service.js';
import { serviceName, type Context, type ServiceRun } from './common.js';
import { durableFloorName, uploadMany } from './uploads.js';

const floorName = (run: ServiceRun) => `database work only (${run.instance.db})`;

export async function upload1k(ctx: Context): Promise<void> {
  const { opts } = ctx;
  // Beside the uploads: the database work of one upload alone, on each kind of database.
  const floors: Variant[] = ctx.services.flatMap((run) => {
    const floor = run.floor;
    if (!floor) return [];
    return [
      {
        name: floorName(run),
        pid: floor.pid,
        dbPids: run.dbPids,
        unit: 'files/s',
        run: async (warmup: boolean): Promise<Outcome> => {
          const result = await closedLoop({
            origin: floor.origin,
            concurrency: 32,
            durationMs: warmup ? opts.warmupMs : opts.durationMs,
            op: async (client) => {
              const response = await client.request({ path: '/commit', method: 'POST' });
              const text = await response.body.text();
              if (response.statusCode !== 200) throw new Error(`database floor answered ${response.statusCode}: ${text.slice(0, 200)}`);
              return 0;
            },
          });
          if (result.failures > 0) throw new Error(`${result.failures} commits failed, first: ${result.firstFailure}`);
          return { value: result.ops / result.seconds };
        },
      },
    ];
  });
  const metrics = await uploadMany(ctx, 'upload-1k', 'kib', KiB, 32, floors);
  const bare = metrics.get('bare node:http')!;
  const durable = metrics.get('bare node:http + fsync')!;
  for (const run of ctx.services) {
    const subject = metrics.get(serviceName(run))!;
    const floor = metrics.get(floorName(run));
    const durableFloor = metrics.get(durableFloorName(run));
    const db = run.instance.db;
    const title = 'Upload 1 KiB files, 32 concurrent';
    compare(ctx, { caseId: 'upload-1k', title, db, subject, baseline: durable, target: 0.9 });
    compare(ctx, { caseId: 'upload-1k', title, db, subject, baseline: bare });
    compare(ctx, { caseId: 'upload-1k', title, db, subject, baseline: floor });
    compare(ctx, { caseId: 'upload-1k', title, db, subject, baseline: durableFloor });
    const text = [smallUploadReason(subject, bare, durable, floor, db, 32), durableFloor && durableFloorNote(subject, durable, durableFloor)];
    ctx.findings.push({ title: `What limits 1 KiB uploads (${db})`, text: text.filter(Boolean).join(' ') });
  }
}

/**
 * Separates the cost of durability (the fsync baseline) and of the database (the database floor)
 * from the service's own work, using how busy the service's main thread (its event loop) was.
 */
function smallUploadReason(
  service: Metric,
  bare: Metric,
  durable: Metric,
  floor: Metric | undefined,
  db: DatabaseKind,
  concurrency: number,
): string {
  const ofDurable = service.median / durable.median;
  const ofFloor = floor ? service.median / floor.median : NaN;
  const cores = service.cores ?? NaN;
  const main = service.mainCores ?? NaN;
  const perFile = (value: number) => fmt((value * 1000) / service.median, 2);
  const facts =
    `${formatValue(service.median, 'files/s')}: ${fmt(ofDurable * 100)} % of a bare server that fsyncs and renames each file ` +
    `(${formatValue(durable.median, 'files/s')}), ${fmt((service.median / bare.median) * 100)} % of one that does not ` +
    `(${formatValue(bare.median, 'files/s')})` +
    (floor ? `, ${fmt(ofFloor * 100)} % of the database work of an upload done alone (${formatValue(floor.median, 'files/s')})` : '') +
    `. With ${concurrency} in flight each upload took ${fmt((concurrency * 1000) / service.median)} ms ` +
    `(bare with fsync: ${fmt((concurrency * 1000) / durable.median)} ms). Per file the service used ${perFile(main)} ms of CPU on its main thread and ` +
    `${perFile(cores - main)} ms on other threads (file system calls, GC)` +
    `${service.dbCores !== undefined ? `, the database server ${perFile(service.dbCores)} ms` : ''}` +
    `; the bare server with fsync ${fmt(((durable.cores ?? NaN) * 1000) / durable.median, 2)} ms in all.`;
  let reason: string;
  if (ofDurable >= 0.8) {
    reason = 'Limit: durability. The fsync and rename of each file set the pace; the service adds little on top.';
  } else if (ofFloor >= 0.7) {
    reason =
      `Limit: the database. Its work for one upload (token and bucket lookups, the insert and its commit) done alone ` +
      `reaches only ${formatValue(floor!.median, 'files/s')}${db === 'embedded' ? ', on the embedded database’s single connection in the service’s own thread' : ''}.`;
  } else if (main >= 0.8) {
    reason =
      `Limit: the service's main thread (${fmt(main, 2)} cores busy) beyond the database: durability alone would allow ` +
      `${formatValue(durable.median, 'files/s')}${floor ? ` and the database ${formatValue(floor.median, 'files/s')}` : ''}; the rest is ` +
      'request handling, multipart parsing, validation and the file steps of each upload. Run with --profile to see where.';
  } else {
    reason =
      `Limit: neither the fsync floor${floor ? ' nor the database floor' : ''}, and the main thread was not saturated ` +
      `(${fmt(main, 2)} cores): each upload waits through a long chain of serial steps (file system calls on the thread ` +
      'pool, database round trips), or the machine had no core to spare (see the load average).';
  }
  return `${facts} ${reason}`;
}

/** How the durable upload floor, the file's durability and the row's commit alone, compares with the fsync baseline. */
function durableFloorNote(service: Metric, durable: Metric, durableFloor: Metric): string {
  const ofDurable = durableFloor.median / durable.median;
  const facts =
    `The durable upload floor (each file written and made durable as the bare server with fsync does, then its row ` +
    `inserted and committed, nothing else) reached ${formatValue(durableFloor.median, 'files/s')}, ` +
    `${fmt(ofDurable * 100)} % of the bare server with fsync; the service ran at ${fmt((service.median / durableFloor.median) * 100)} % of it.`;
  if (ofDurable >= 0.9) return facts;
  return (
    `${facts} Each upload waits on the disk twice, for its file's fsync and then for its row's commit, where the bare ` +
    'server waits once: below 0.9 of the bare server with fsync for any service that commits its row after the bytes are durable.'
  );
}
