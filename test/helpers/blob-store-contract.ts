import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import type { Test } from 'tap';
import type { BlobStore } from '../../src/storage/blob-store.js';
import { isStorageError, StorageError } from '../../src/storage/errors.js';
import { incompleteWrites, putBytes, readBytes, storedKeys } from './stored-files.js';

const MiB = 1024 * 1024;

/** A byte stream of the given chunks, pushed one per read() as a socket would; optionally failing after `failAfter` of them. */
export function streamOf(chunks: readonly Buffer[], failAfter?: { count: number; error: Error }): Readable {
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

export function randomChunks(total: number, size = 64 * 1024): Buffer[] {
  const chunks: Buffer[] = [];
  for (let left = total; left > 0; left -= size) chunks.push(randomBytes(Math.min(size, left)));
  return chunks;
}

const sha256 = (chunks: readonly Buffer[]) => chunks.reduce((hash, chunk) => hash.update(chunk), createHash('sha256')).digest('hex');

/** Nothing of the store is left: no object, no incomplete write. */
async function empty(t: Test, store: BlobStore, what: string): Promise<void> {
  t.same(await storedKeys(store), [], `${what}: no stored object`);
  t.same(await incompleteWrites(store), [], `${what}: no incomplete write`);
}

/**
 * What every BlobStore must do, run against a real store of each kind. `newStore` gives a fresh,
 * empty, prepared store for one test. `openWriteBytes`: how much a write must have sent before the
 * store holds any of it (an object store keeps a body smaller than one part in memory).
 */
export function blobStoreContract(t: Test, newStore: (t: Test) => Promise<BlobStore>, { openWriteBytes = MiB } = {}): void {
  t.test('a 20 MiB stream is stored with its size and hash, visible only after commit', async (t) => {
    const store = await newStore(t);
    const chunks = randomChunks(20 * MiB);
    const written = await store.write(streamOf(chunks), { maxBytes: 100 * MiB });
    t.match(written.key, /^[a-z0-9]+$/);
    t.equal(written.size, 20 * MiB);
    t.equal(written.sha256, sha256(chunks));
    t.same(await storedKeys(store), [], 'nothing stored before commit');
    t.equal((await incompleteWrites(store)).length <= 1, true, 'at most the write itself is in progress');
    await t.rejects(store.open(written.key), { name: 'StorageError', kind: 'not-found' }, 'not readable before commit');

    await written.commit();
    t.same(await storedKeys(store), [written.key]);
    t.same(await incompleteWrites(store), [], 'nothing left in progress');
    t.ok((await readBytes(store, written.key))?.equals(Buffer.concat(chunks)), 'the same bytes');
    await t.rejects(written.commit(), 'commit happens once');
  });

  t.test('each write gets its own key', async (t) => {
    const store = await newStore(t);
    const [a, b] = await Promise.all([0, 1].map(() => store.write(streamOf([Buffer.from('x')]), { maxBytes: 1 })));
    t.not(a!.key, b!.key);
    await Promise.all([a!.abort(), b!.abort()]);
  });

  t.test('a write under a key the caller derives commits there, and a second one replaces it whole', async (t) => {
    const store = await newStore(t);
    const key = createHash('sha256').update(`derived ${randomBytes(8).toString('hex')}`).digest('hex');
    const first = randomChunks(2 * MiB + 3);
    const written = await store.write(streamOf(first), { maxBytes: 10 * MiB, key });
    t.equal(written.key, key, 'the given key');
    t.equal(written.sha256, sha256(first));
    t.same(await storedKeys(store), [], 'nothing stored before commit');
    await written.commit();
    t.same(await storedKeys(store), [key], 'listed under the given key');
    t.ok((await readBytes(store, key))?.equals(Buffer.concat(first)), 'the same bytes');

    const second = randomChunks(1000);
    const again = await store.write(streamOf(second), { maxBytes: 10 * MiB, key });
    t.ok((await readBytes(store, key))?.equals(Buffer.concat(first)), 'the old bytes until the new write commits');
    await again.commit();
    t.ok((await readBytes(store, key))?.equals(Buffer.concat(second)), 'replaced whole');
    t.same(await storedKeys(store), [key], 'one object');
    t.same(await incompleteWrites(store), [], 'nothing left in progress');
    await store.remove([key]);
    await empty(t, store, 'after remove');
  });

  t.test('two writes of one derived key at once: each commits whole, one of them is kept', async (t) => {
    const store = await newStore(t);
    const key = createHash('sha256').update(`racing ${randomBytes(8).toString('hex')}`).digest('hex');
    const bodies = [Buffer.concat(randomChunks(MiB)), Buffer.concat(randomChunks(MiB))];
    const writes = await Promise.all(bodies.map((body) => store.write(streamOf([body]), { maxBytes: 10 * MiB, key })));
    await Promise.all(writes.map((written) => written.commit()));
    const stored = await readBytes(store, key);
    t.ok(bodies.some((body) => stored?.equals(body)), 'the bytes of one write, not a mix');
    t.same(await incompleteWrites(store), [], 'nothing left in progress');
    await store.remove([key]);
  });

  t.test('aborting a write under a derived key leaves nothing', async (t) => {
    const store = await newStore(t);
    const key = createHash('sha256').update(`aborted ${randomBytes(8).toString('hex')}`).digest('hex');
    const written = await store.write(streamOf(randomChunks(MiB)), { maxBytes: MiB, key });
    await written.abort();
    await empty(t, store, 'after abort');
    await t.rejects(store.open(key), { name: 'StorageError', kind: 'not-found' });
  });

  t.test('an empty stream is a valid empty object', async (t) => {
    const store = await newStore(t);
    const written = await store.write(streamOf([]), { maxBytes: 0 });
    t.equal(written.size, 0);
    t.equal(written.sha256, sha256([]));
    await written.commit();
    t.equal((await readBytes(store, written.key))?.length, 0);
  });

  t.test('abort before commit leaves nothing, and commit is refused after it', async (t) => {
    const store = await newStore(t);
    const written = await store.write(streamOf(randomChunks(MiB)), { maxBytes: MiB });
    await written.abort();
    await written.abort();
    await t.rejects(written.commit());
    await empty(t, store, 'after abort');
  });

  t.test('abort after commit removes the stored object', async (t) => {
    const store = await newStore(t);
    const written = await store.write(streamOf(randomChunks(MiB)), { maxBytes: MiB });
    await written.commit();
    await written.abort();
    await written.abort();
    await empty(t, store, 'after abort');
  });

  t.test('a body over maxBytes is refused and leaves nothing; exactly maxBytes is accepted', async (t) => {
    const store = await newStore(t);
    const chunks = randomChunks(3 * MiB + 5);
    const source = streamOf(chunks);
    const error = await store.write(source, { maxBytes: 3 * MiB + 4 }).catch((error: unknown) => error);
    t.ok(isStorageError(error, 'too-large'), 'too-large');
    await empty(t, store, 'after the refusal');
    // Read to its end rather than destroyed, so a multipart parser feeding it goes on.
    if (!source.readableEnded) await once(source, 'end');
    t.equal(source.errored, null, 'the source is consumed, not failed');

    const written = await store.write(streamOf(chunks), { maxBytes: 3 * MiB + 5 });
    t.equal(written.size, 3 * MiB + 5);
    await written.abort();
  });

  t.test('a first chunk already over the limit is refused', async (t) => {
    const store = await newStore(t);
    await t.rejects(store.write(streamOf([Buffer.alloc(10)]), { maxBytes: 9 }), StorageError);
    await empty(t, store, 'after the refusal');
  });

  t.test('a source that fails mid-stream rejects with its error and leaves nothing', async (t) => {
    const store = await newStore(t);
    const boom = Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
    const error = await store.write(streamOf(randomChunks(4 * MiB), { count: 20, error: boom }), { maxBytes: 10 * MiB }).catch((error: unknown) => error);
    t.equal(error, boom);
    await empty(t, store, 'after the failure');
  });

  t.test('a source destroyed without an error (an aborted request) rejects and leaves nothing', async (t) => {
    const store = await newStore(t);
    // Its end never comes, so the destroy cannot follow a complete body however fast the store reads.
    const source = new Readable({ read() {} });
    source.push(randomBytes(MiB));
    source.once('data', () => setImmediate(() => source.destroy()));
    await t.rejects(store.write(source, { maxBytes: 10 * MiB }), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
    await empty(t, store, 'after the abort');
  });

  t.test('a source that failed before write() is refused at once', async (t) => {
    const store = await newStore(t);
    const source = streamOf([]);
    source.on('error', () => {});
    source.destroy(new Error('gone'));
    await t.rejects(store.write(source, { maxBytes: 10 }), { message: 'gone' });
    await empty(t, store, 'after the refusal');
  });

  t.test('open reads the whole object or an inclusive range of it', async (t) => {
    const store = await newStore(t);
    const content = Buffer.concat(randomChunks(3 * MiB + 11));
    const key = await putBytes(store, content);
    const whole = await store.open(key);
    t.ok((await buffer(whole.stream)).equals(content));
    for (const range of [{ start: 0, end: 0 }, { start: 10, end: 19 }, { start: MiB - 1, end: 2 * MiB }, { start: content.length - 1, end: content.length - 1 }]) {
      const part = await store.open(key, range);
      t.ok((await buffer(part.stream)).equals(content.subarray(range.start, range.end + 1)), `bytes ${range.start}-${range.end}`);
    }
    await t.rejects(store.open('f'.repeat(32)), { name: 'StorageError', kind: 'not-found' }, 'a missing key is not-found');
  });

  t.test('read gives an inclusive range of the object whole in memory', async (t) => {
    const store = await newStore(t);
    const content = Buffer.concat(randomChunks(MiB + 11));
    const key = await putBytes(store, content);
    for (const range of [{ start: 0, end: 0 }, { start: 10, end: 65_545 }, { start: 0, end: content.length - 1 }, { start: content.length - 1, end: content.length - 1 }]) {
      t.ok((await store.read(key, range)).equals(content.subarray(range.start, range.end + 1)), `bytes ${range.start}-${range.end}`);
    }
    await t.rejects(store.read('f'.repeat(32), { start: 0, end: 0 }), { name: 'StorageError', kind: 'not-found' }, 'a missing key is not-found');
  });

  t.test('a reader that goes away stops the read', async (t) => {
    const store = await newStore(t);
    const key = await putBytes(store, Buffer.concat(randomChunks(8 * MiB)));
    const { stream } = await store.open(key);
    await once(stream, 'readable');
    const closed = new Promise((resolve) => stream.once('close', resolve));
    // An S3 body (undici's) reports its abort as an error; the reader that destroyed it asked for that.
    stream.on('error', () => {});
    stream.destroy();
    await closed;
    t.ok(stream.destroyed);
    t.ok((await readBytes(store, key))?.length === 8 * MiB, 'the object is still whole');
  });

  t.test('remove deletes stored objects and ignores missing ones', async (t) => {
    const store = await newStore(t);
    const kept = await putBytes(store, Buffer.from('kept'));
    const gone = await putBytes(store, Buffer.from('gone'));
    await store.remove([gone, 'f'.repeat(32)]);
    t.same(await storedKeys(store), [kept]);
    await store.remove([]);
    t.equal(await readBytes(store, gone), undefined);
  });

  t.test('incomplete writes are listed with their start and can be removed', async (t) => {
    const store = await newStore(t);
    // A write that stays open: its first bytes sent, the rest waiting.
    const source = new Readable({ read() {} });
    source.push(randomBytes(openWriteBytes));
    const pending = store.write(source, { maxBytes: 10 * MiB }).catch((error: unknown) => error);
    let ids: string[] = [];
    for (let i = 0; i < 100 && ids.length === 0; i++) {
      ids = await incompleteWrites(store);
      if (ids.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    t.equal(ids.length, 1, 'the open write is listed');
    for await (const page of store.listIncompleteWrites()) {
      for (const write of page) t.ok(Math.abs(write.startedAt.getTime() - Date.now()) < 60_000, 'with when it started');
    }
    await store.removeIncompleteWrites(ids);
    source.push(null);
    const outcome = await pending;
    if (!(outcome instanceof Error)) await (outcome as { abort(): Promise<void> }).abort();
    t.same(await incompleteWrites(store), [], 'removed');
    await store.removeIncompleteWrites(ids);
  });

  t.test('abortWritesInProgress removes what streaming and uncommitted writes left, and nothing stored', async (t) => {
    const store = await newStore(t);
    const kept = await putBytes(store, randomBytes(1024));
    const written = await store.write(streamOf(randomChunks(openWriteBytes)), { maxBytes: 10 * MiB });
    const source = new Readable({ read() {} });
    source.push(randomBytes(openWriteBytes));
    const streaming = store.write(source, { maxBytes: 10 * MiB }).catch((error: unknown) => error);
    for (let i = 0; i < 200 && (await incompleteWrites(store)).length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    t.equal((await incompleteWrites(store)).length, 2, 'both writes are in progress');

    await store.abortWritesInProgress();
    t.same(await incompleteWrites(store), [], 'nothing of either write is left');
    t.same(await storedKeys(store), [kept], 'the stored object is untouched');
    source.push(null);
    const outcome = await streaming;
    if (!(outcome instanceof Error)) await (outcome as { abort(): Promise<void> }).abort();
    await written.abort();
    t.same(await storedKeys(store), [kept]);
  });

  t.test('a healthy store is writable', async (t) => {
    const store = await newStore(t);
    await t.resolves(store.checkWritable());
  });
}
