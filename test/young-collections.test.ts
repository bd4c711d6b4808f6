import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import t from 'tap';
import { DiskStore } from '../src/storage/disk/store.js';
import { COLLECT_EVERY_BYTES, freshBytesArrived } from '../src/storage/young-collections.js';
import { randomChunks, streamOf } from './helpers/blob-store-contract.js';

const MiB = 1024 * 1024;

/** The young-generation collections the process runs while `work` runs. */
async function minorCollectionsDuring(work: () => Promise<void>): Promise<number> {
  let minor = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) minor += 1;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    await work();
    // gc entries are delivered after the collection, on a later turn of the event loop.
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    observer.disconnect();
  }
  return minor;
}

t.test('one young collection after every COLLECT_EVERY_BYTES, none before', async (t) => {
  // Start from a fresh count: whatever earlier tests left below the threshold is taken first.
  freshBytesArrived(COLLECT_EVERY_BYTES);
  const below = await minorCollectionsDuring(async () => freshBytesArrived(COLLECT_EVERY_BYTES - 1));
  t.equal(below, 0, 'one byte short of the threshold: no collection was asked for');
  const eight = await minorCollectionsDuring(async () => {
    freshBytesArrived(1);
    for (let i = 0; i < 7; i++) freshBytesArrived(COLLECT_EVERY_BYTES);
  });
  t.ok(eight >= 8, `8 thresholds crossed: ${eight} young collections`);
});

t.test('an upload written to disk collects as its bytes arrive', async (t) => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'young-collections-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const store = new DiskStore(root);
  await store.prepare();
  const size = 8 * COLLECT_EVERY_BYTES;
  const collections = await minorCollectionsDuring(async () => {
    const written = await store.write(streamOf(randomChunks(size)), { maxBytes: size });
    await written.commit();
  });
  t.ok(collections >= size / COLLECT_EVERY_BYTES, `${size / MiB} MiB written: ${collections} young collections`);
});
