import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { BlobTooLargeError } from '../src/storage/blob-store.js';
import { DiskStore, type DiskStoreOptions } from '../src/storage/disk-store.js';
import { onSmallDisk, whyNoSmallDisk } from './helpers/small-disk.js';

const MiB = 1024 * 1024;
const HOUR = 60 * 60 * 1000;

async function newStore(t: Test, options?: DiskStoreOptions): Promise<DiskStore> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'disk-store-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const store = new DiskStore(root, options);
  await store.prepare();
  return store;
}

/** A byte stream of the given chunks, pushed one per read() as a socket would; optionally failing after `failAfter` of them. */
function streamOf(chunks: readonly Buffer[], failAfter?: { count: number; error: Error }): Readable {
  let next = 0;
  return new Readable({
    read() {
      if (failAfter && next === failAfter.count) {
        this.destroy(failAfter.error);
        return;
      }
      this.push(next < chunks.length ? chunks[next++] : null);
    },
  });
}

function randomChunks(total: number, size = 64 * 1024): Buffer[] {
  const chunks: Buffer[] = [];
  for (let left = total; left > 0; left -= size) chunks.push(randomBytes(Math.min(size, left)));
  return chunks;
}

/** Every file under `dir`, relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

async function storeObject(store: DiskStore, bytes: Buffer): Promise<string> {
  const blob = await store.receive(streamOf([bytes]), { maxBytes: bytes.length });
  await blob.commit();
  return blob.storageKey;
}

async function age(file: string, ms: number): Promise<void> {
  const then = new Date(Date.now() - ms);
  await utimes(file, then, then);
}

t.test('a 20 MiB stream is stored with its size and hash, visible only after commit', async (t) => {
  const store = await newStore(t);
  const chunks = randomChunks(20 * MiB);
  const sha256 = createHash('sha256');
  for (const chunk of chunks) sha256.update(chunk);

  const blob = await store.receive(streamOf(chunks), { maxBytes: 100 * MiB });
  t.match(blob.storageKey, /^[0-9a-f]{32}$/);
  t.equal(blob.size, 20 * MiB);
  t.equal(blob.sha256, sha256.digest('hex'));
  t.same(await filesUnder(store.objectsDir), [], 'nothing stored before commit');
  t.same(await filesUnder(store.tmpDir), [`${blob.storageKey}.part`]);

  await blob.commit();
  t.same(await filesUnder(store.tmpDir), [], 'nothing left in tmp');
  t.equal(store.pathOf(blob.storageKey), path.join(store.objectsDir, blob.storageKey.slice(0, 2), blob.storageKey));
  t.ok((await readFile(store.pathOf(blob.storageKey))).equals(Buffer.concat(chunks)), 'the same bytes');
  await t.rejects(blob.commit(), 'commit happens once');
});

t.test('each upload gets its own key', async (t) => {
  const store = await newStore(t);
  const [a, b] = await Promise.all([0, 1].map(() => store.receive(streamOf([Buffer.from('x')]), { maxBytes: 1 })));
  t.not(a!.storageKey, b!.storageKey);
  t.equal((await filesUnder(store.tmpDir)).length, 2);
});

t.test('an empty stream is a valid empty blob', async (t) => {
  const store = await newStore(t);
  const blob = await store.receive(streamOf([]), { maxBytes: 0 });
  t.equal(blob.size, 0);
  t.equal(blob.sha256, createHash('sha256').digest('hex'));
  await blob.commit();
  t.equal((await readFile(store.pathOf(blob.storageKey))).length, 0);
});

t.test('discard before commit removes the temp file, and commit is refused after it', async (t) => {
  const store = await newStore(t);
  const blob = await store.receive(streamOf(randomChunks(MiB)), { maxBytes: MiB });
  await blob.discard();
  await blob.discard();
  t.same(await filesUnder(store.tmpDir), []);
  await t.rejects(blob.commit());
  t.same(await filesUnder(store.objectsDir), []);
});

t.test('discard after commit removes the stored object', async (t) => {
  const store = await newStore(t);
  const blob = await store.receive(streamOf(randomChunks(MiB)), { maxBytes: MiB });
  await blob.commit();
  await blob.discard();
  await blob.discard();
  t.same(await filesUnder(store.objectsDir), []);
  t.same(await filesUnder(store.tmpDir), []);
});

t.test('a body over maxBytes is refused and leaves nothing; exactly maxBytes is accepted', async (t) => {
  const store = await newStore(t);
  const chunks = randomChunks(3 * MiB + 5);
  const source = streamOf(chunks);
  const error = await store.receive(source, { maxBytes: 3 * MiB + 4 }).catch((error: unknown) => error);
  t.type(error, BlobTooLargeError);
  t.equal((error as BlobTooLargeError).maxBytes, 3 * MiB + 4);
  t.same(await filesUnder(store.tmpDir), []);
  t.same(await filesUnder(store.objectsDir), []);
  // Read to its end rather than destroyed, so a multipart parser feeding it goes on.
  if (!source.readableEnded) await once(source, 'end');
  t.equal(source.errored, null, 'the source is consumed, not failed');
  source.resume();

  const blob = await store.receive(streamOf(chunks), { maxBytes: 3 * MiB + 5 });
  t.equal(blob.size, 3 * MiB + 5);
});

t.test('a first chunk already over the limit is refused', async (t) => {
  const store = await newStore(t);
  await t.rejects(store.receive(streamOf([Buffer.alloc(10)]), { maxBytes: 9 }), BlobTooLargeError);
  t.same(await filesUnder(store.tmpDir), []);
});

t.test("a source that fails mid-stream rejects with its error and leaves nothing", async (t) => {
  const store = await newStore(t);
  const boom = Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
  const source = streamOf(randomChunks(4 * MiB), { count: 20, error: boom });
  const error = await store.receive(source, { maxBytes: 10 * MiB }).catch((error: unknown) => error);
  t.equal(error, boom);
  t.same(await filesUnder(store.tmpDir), []);
  t.same(await filesUnder(store.objectsDir), []);
});

t.test('a source destroyed without an error (an aborted request) rejects and leaves nothing', async (t) => {
  const store = await newStore(t);
  const source = streamOf(randomChunks(4 * MiB));
  source.once('data', () => setImmediate(() => source.destroy()));
  await t.rejects(store.receive(source, { maxBytes: 10 * MiB }), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
  t.same(await filesUnder(store.tmpDir), []);
});

t.test('a source that failed before receive() is refused at once', async (t) => {
  const store = await newStore(t);
  const source = streamOf([]);
  source.on('error', () => {});
  source.destroy(new Error('gone'));
  await t.rejects(store.receive(source, { maxBytes: 10 }), { message: 'gone' });
  t.same(await filesUnder(store.tmpDir), []);
});

t.test('remove deletes stored objects and ignores missing ones', async (t) => {
  const store = await newStore(t);
  const kept = await storeObject(store, Buffer.from('kept'));
  const gone = await storeObject(store, Buffer.from('gone'));
  await store.remove([gone, 'f'.repeat(32), 'abc']);
  t.same(await filesUnder(store.objectsDir), [path.join(kept.slice(0, 2), kept)]);
  await store.remove([]);
  await t.rejects(store.remove(['../x']), 'a bad key is refused, not resolved somewhere else');
});

t.test('pathOf accepts only [a-z0-9]+ keys', async (t) => {
  const store = await newStore(t);
  t.equal(store.pathOf('abc123'), path.join(store.objectsDir, 'ab', 'abc123'));
  for (const key of ['../x', 'a/b', '', 'ABC', 'ab.part', 'ab\0', '..', 'é']) {
    t.throws(() => store.pathOf(key), `refuses ${JSON.stringify(key)}`);
  }
});

t.test('sweepOrphans removes only old temp files and old unreferenced objects', async (t) => {
  const store = await newStore(t);
  const oldTemp = path.join(store.tmpDir, `${'a'.repeat(32)}.part`);
  const freshTemp = path.join(store.tmpDir, `${'b'.repeat(32)}.part`);
  await writeFile(oldTemp, 'half an upload');
  await writeFile(freshTemp, 'an upload in progress');
  await age(oldTemp, 2 * HOUR);

  const oldOrphan = await storeObject(store, Buffer.from('crashed before the insert'));
  const oldReferenced = await storeObject(store, Buffer.from('a stored file'));
  const freshOrphan = await storeObject(store, Buffer.from('renamed, insert under way'));
  await age(store.pathOf(oldOrphan), 2 * HOUR);
  await age(store.pathOf(oldReferenced), 2 * HOUR);

  const asked: string[][] = [];
  const result = await store.sweepOrphans({
    olderThanMs: HOUR,
    referenced: async (keys) => {
      asked.push([...keys]);
      return new Set(keys.filter((key) => key === oldReferenced));
    },
  });
  t.same(result, { tempRemoved: 1, objectsRemoved: 1 });
  t.same(asked.flat().sort(), [oldOrphan, oldReferenced].sort(), 'only old objects are looked up');
  t.same(await filesUnder(store.tmpDir), [path.basename(freshTemp)]);
  t.same(
    (await filesUnder(store.objectsDir)).sort(),
    [oldReferenced, freshOrphan].map((key) => path.join(key.slice(0, 2), key)).sort(),
  );

  t.same(await store.sweepOrphans({ olderThanMs: HOUR, referenced: async (keys) => new Set(keys) }), {
    tempRemoved: 0,
    objectsRemoved: 0,
  });
});

t.test('sweepOrphans asks about objects in batches', async (t) => {
  const store = await newStore(t, { sweepBatchSize: 3 });
  const keys: string[] = [];
  for (let i = 0; i < 10; i++) {
    const key = await storeObject(store, Buffer.from(`file ${i}`));
    await age(store.pathOf(key), 2 * HOUR);
    keys.push(key);
  }
  for (let i = 0; i < 7; i++) {
    const file = path.join(store.tmpDir, `${i}.part`);
    await writeFile(file, 'x');
    await age(file, 2 * HOUR);
  }
  const referencedKeys = new Set(keys.slice(0, 4));

  const asked: string[][] = [];
  const result = await store.sweepOrphans({
    olderThanMs: HOUR,
    referenced: async (batch) => {
      asked.push([...batch]);
      return new Set(batch.filter((key) => referencedKeys.has(key)));
    },
  });
  t.same(result, { tempRemoved: 7, objectsRemoved: 6 });
  t.ok(asked.length >= 4 && asked.every((batch) => batch.length <= 3), 'no batch over the size');
  t.same(asked.flat().sort(), [...keys].sort(), 'every key asked about once');
  t.same((await filesUnder(store.objectsDir)).map((file) => path.basename(file)).sort(), [...referencedKeys].sort());
});

t.test('sweepOrphans leaves alone what is not a stored object', async (t) => {
  const store = await newStore(t);
  const stray = [path.join(store.objectsDir, 'ab', 'cd0000'), path.join(store.objectsDir, 'ab', 'ab.txt'), path.join(store.objectsDir, 'README')];
  await mkdir(path.join(store.objectsDir, 'ab'), { recursive: true });
  for (const file of stray) {
    await writeFile(file, 'x');
    await age(file, 2 * HOUR);
  }
  const result = await store.sweepOrphans({ olderThanMs: HOUR, referenced: async () => new Set() });
  t.same(result, { tempRemoved: 0, objectsRemoved: 0 });
  t.equal((await filesUnder(store.objectsDir)).length, 3);
});

t.test('freeBytes reports the space left on the volume', async (t) => {
  const store = await newStore(t);
  const free = await store.freeBytes();
  t.ok(Number.isSafeInteger(free) && free > 0, `${free} bytes`);
});

// A private mount namespace lets an unprivileged user mount a tiny tmpfs that nobody else sees.
t.test('a full disk rejects with ENOSPC and leaves no temp file', { skip: whyNoSmallDisk() }, async (t) => {
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
  t.same(JSON.parse(output), { code: 'ENOSPC', tmp: [] });
});
