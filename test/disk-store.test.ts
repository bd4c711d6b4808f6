import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { DiskStore, type DiskStoreOptions } from '../src/storage/disk/store.js';
import { blobStoreContract, randomChunks, streamOf } from './helpers/blob-store-contract.js';
import { onSmallDisk, whyNoSmallDisk } from './helpers/small-disk.js';
import { putBytes, storedKeys } from './helpers/stored-files.js';

const MiB = 1024 * 1024;

async function newStore(t: Test, options?: DiskStoreOptions): Promise<DiskStore> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'disk-store-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const store = new DiskStore(root, options);
  await store.prepare();
  return store;
}

/** Every file under `dir`, relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

t.test('the BlobStore contract', async (t) => blobStoreContract(t, (t) => newStore(t)));

t.test('bytes stream into tmp/<instance>_<key>.part and are renamed to objects/<first two>/<key> on commit', async (t) => {
  const store = await newStore(t);
  const written = await store.write(streamOf(randomChunks(2 * MiB)), { maxBytes: 2 * MiB });
  const [temp, ...more] = await filesUnder(store.tmpDir);
  t.match(temp, new RegExp(`^[a-z0-9-]+_${written.key}\\.part$`), 'named by the instance that writes it');
  t.same(more, []);
  t.same(await filesUnder(store.objectsDir), []);
  await written.commit();
  t.same(await filesUnder(store.tmpDir), []);
  t.same(await filesUnder(store.objectsDir), [path.join(written.key.slice(0, 2), written.key)]);
});

t.test('a commit whose fan-out folder was removed meanwhile creates it again and stores the bytes', async (t) => {
  const store = await newStore(t);
  const bytes = Buffer.from('into a folder made again');
  const written = await store.write(streamOf([bytes]), { maxBytes: MiB });
  const folder = path.join(store.objectsDir, written.key.slice(0, 2));
  await mkdir(folder, { recursive: true });
  await rm(folder, { recursive: true });
  await written.commit();
  t.same(await readFile(path.join(folder, written.key)), bytes);
  t.same(await filesUnder(store.tmpDir), []);
});

t.test('a key that is not [a-z0-9]+ is refused, never resolved somewhere else', async (t) => {
  const store = await newStore(t);
  for (const key of ['../x', 'a/b', '', 'ABC', 'ab.part', 'ab\0', '..', 'é']) {
    await t.rejects(store.open(key), `open refuses ${JSON.stringify(key)}`);
    await t.rejects(store.remove([key]), `remove refuses ${JSON.stringify(key)}`);
  }
});

t.test('listings leave alone what the store did not write', async (t) => {
  const store = await newStore(t);
  const key = await putBytes(store, Buffer.from('stored'));
  await mkdir(path.join(store.objectsDir, 'ab'), { recursive: true });
  for (const stray of [path.join(store.objectsDir, 'ab', 'cd0000'), path.join(store.objectsDir, 'ab', 'ab.txt'), path.join(store.objectsDir, 'README')]) {
    await writeFile(stray, 'x');
  }
  await writeFile(path.join(store.tmpDir, 'notes.txt'), 'x');
  t.same(await storedKeys(store), [key]);
  const incomplete: string[] = [];
  for await (const page of store.listIncompleteWrites()) incomplete.push(...page.map((write) => write.id));
  t.same(incomplete, []);
});

t.test('listObjects gives pages of at most pageSize', async (t) => {
  const store = await newStore(t, { pageSize: 3 });
  const keys: string[] = [];
  for (let i = 0; i < 10; i++) keys.push(await putBytes(store, Buffer.from(`file ${i}`)));
  const pages: number[] = [];
  for await (const page of store.listObjects()) pages.push(page.length);
  t.ok(pages.every((size) => size <= 3), `pages: ${pages.join(', ')}`);
  t.same(await storedKeys(store), keys.sort());
});

t.test('checkWritable says full below the free-space floor', async (t) => {
  const store = await newStore(t, { minFreeBytes: Number.MAX_SAFE_INTEGER });
  await t.rejects(store.checkWritable(), { name: 'StorageError', kind: 'full' });
  const missing = new DiskStore(path.join(os.tmpdir(), `no-such-store-${process.pid}`));
  await t.rejects(missing.checkWritable(), { name: 'StorageError', kind: 'unavailable' });
});

t.test('checkWritable trusts a healthy answer for a second, then looks again', async (t) => {
  const store = await newStore(t);
  await store.checkWritable();
  await rm(store.root, { recursive: true });
  await t.resolves(store.checkWritable(), 'within the second: the healthy answer stands');
  await setTimeout(1100);
  await t.rejects(store.checkWritable(), { name: 'StorageError', kind: 'unavailable' }, 'after it: the missing folders are seen');
});

t.test('open of a key whose bytes are gone is not-found', async (t) => {
  const store = await newStore(t);
  const key = await putBytes(store, Buffer.from('soon gone'));
  await rm(path.join(store.objectsDir, key.slice(0, 2), key));
  await t.rejects(store.open(key), { name: 'StorageError', kind: 'not-found' });
  await t.resolves(store.remove([key]));
});

// A private mount namespace lets an unprivileged user mount a tiny tmpfs that nobody else sees.
t.test('a full disk rejects as full and leaves no temp file', { skip: whyNoSmallDisk() }, async (t) => {
  const mountPoint = await mkdtemp(path.join(os.tmpdir(), 'disk-full-'));
  t.teardown(() => rm(mountPoint, { recursive: true, force: true }));
  const child = fileURLToPath(new URL('fixtures/disk-full-child.ts', import.meta.url));
  // execArgv carries the loader tap runs TypeScript through.
  const [command, ...args] = [...onSmallDisk(mountPoint, '2m'), process.execPath, ...process.execArgv, child, mountPoint];
  const run = spawn(command as string, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  run.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
  const [status] = await once(run, 'close');
  t.equal(status, 0);
  t.same(JSON.parse(output), { kind: 'full', tmp: [] });
});
