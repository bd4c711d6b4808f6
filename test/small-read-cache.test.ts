import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import t from 'tap';
import { DiskStore } from '../src/storage/disk/store.js';
import { CachedSmallReads, ENTRY_OVERHEAD_BYTES, SmallReadCache } from '../src/storage/small-read-cache.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { download } from './helpers/download.js';
import { postForm, startService, testDatabase } from './helpers/service.js';
import { upload } from './helpers/upload.js';

const NOT_FOUND = { Code: -1, Message: 'Could not find that file.' };

t.test('the cache answers ranges inside the bytes it keeps, from a copy of its own', async (t) => {
  const cache = new SmallReadCache(64 * 1024, 1024);
  const bytes = randomBytes(1000);
  const original = Buffer.from(bytes);
  cache.keep('a', bytes);
  bytes.fill(0);
  t.same(cache.get('a', { start: 0, end: 999 }), original, 'the whole of it, as it was when kept');
  t.same(cache.get('a', { start: 10, end: 19 }), original.subarray(10, 20), 'a range inside it');
  t.equal(cache.get('a', { start: 990, end: 1000 }), undefined, 'a range past what is kept');
  t.equal(cache.get('b', { start: 0, end: 0 }), undefined, 'a key never kept');
  cache.keep('big', randomBytes(1025));
  t.equal(cache.get('big', { start: 0, end: 0 }), undefined, 'a read above maxReadBytes is not kept');
  t.equal(cache.bytes, 1000 + ENTRY_OVERHEAD_BYTES);
});

t.test('the cache holds at most maxBytes, the least recently used going first', async (t) => {
  const entry = 1000 + ENTRY_OVERHEAD_BYTES;
  const cache = new SmallReadCache(4 * entry, 1000);
  const content = new Map(['a', 'b', 'c', 'd', 'e'].map((key) => [key, randomBytes(1000)]));
  for (const key of ['a', 'b', 'c', 'd']) cache.keep(key, content.get(key)!);
  t.ok(cache.get('a', { start: 0, end: 0 }), 'a is read again, so b is now the least recently used');
  cache.keep('e', content.get('e')!);
  t.equal(cache.get('b', { start: 0, end: 999 }), undefined, 'b went');
  for (const key of ['a', 'c', 'd', 'e']) t.same(cache.get(key, { start: 0, end: 999 }), content.get(key), `${key} stayed`);
  t.equal(cache.bytes, 4 * entry);
  cache.forget(['a', 'nothing']);
  t.equal(cache.get('a', { start: 0, end: 0 }), undefined, 'a forgotten');
  t.equal(cache.bytes, 3 * entry);
});

t.test('reads through the cache on a disk store', async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), 'filestore-cache-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const store = new DiskStore(root);
  await store.prepare();
  const cached = new CachedSmallReads(store);
  const put = async (content: Buffer) => {
    const written = await cached.write(Readable.from([content]), { maxBytes: content.length });
    await written.commit();
    return { key: written.key, file: path.join(store.objectsDir, written.key.slice(0, 2), written.key) };
  };

  const content = randomBytes(1024);
  const kept = await put(content);
  t.same(await cached.read(kept.key, { start: 0, end: 1023 }), content);
  // Gone from the disk behind the store's back: what answers now can only be the bytes kept.
  await unlink(kept.file);
  await t.rejects(store.read(kept.key, { start: 0, end: 0 }), { name: 'StorageError', kind: 'not-found' }, 'the disk has no bytes');
  t.same(await cached.read(kept.key, { start: 100, end: 199 }), content.subarray(100, 200), 'a range of the kept bytes');

  const removed = await put(randomBytes(1024));
  await cached.read(removed.key, { start: 0, end: 1023 });
  await cached.remove([removed.key]);
  await t.rejects(cached.read(removed.key, { start: 0, end: 1023 }), { name: 'StorageError', kind: 'not-found' }, 'remove() forgets what was kept');

  const middle = await put(randomBytes(1024));
  await cached.read(middle.key, { start: 10, end: 20 });
  await unlink(middle.file);
  await t.rejects(cached.read(middle.key, { start: 10, end: 20 }), { name: 'StorageError', kind: 'not-found' }, 'a read that does not start at byte 0 is not kept');

  const large = await put(randomBytes(cached.cache.maxReadBytes + 1));
  await cached.read(large.key, { start: 0, end: cached.cache.maxReadBytes });
  await unlink(large.file);
  await t.rejects(cached.read(large.key, { start: 0, end: 0 }), { name: 'StorageError', kind: 'not-found' }, 'a read above the limit is not kept');
});

t.test('a file deleted or replaced on one instance is not served from the bytes another kept', async (t) => {
  const database = await testDatabase();
  const first = await startService(t);
  const second = await startService(t, { database: await database.openAnother(), env: { STORAGE_DIR: first.config.storageDir } });
  const firstUrl = await first.listen();
  const secondUrl = await second.listen();
  const owner = await first.newApp();
  const bucketName = uniqueBucketName('cache');
  const bucketId = await createBucket(first, owner.token, { name: bucketName, openToRead: true });
  const query = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
  const uploaded = await upload({ baseUrl: firstUrl, before: query, fileName: 'small.txt', size: 1000 });
  const fileKey = uploaded.body.FileKey as number;

  const whole = await download(firstUrl, `/${bucketName}/small.txt`);
  t.equal(whole.sha256, uploaded.sha256, 'served by the first instance');
  t.equal((await download(secondUrl, `/Download/FromKey/${fileKey}`)).sha256, uploaded.sha256, 'served by the second instance');
  const ranged = await download(firstUrl, `/Download/FromKey/${fileKey}`, { headers: { Range: 'bytes=10-19' } });
  t.equal(ranged.status, 206);
  t.same(ranged.body, whole.body.subarray(10, 20), 'a range of the kept bytes');

  t.same((await postForm(second.app, '/API/DeleteFile', { AccessToken: owner.token, FileKey: fileKey })).json().Code, 0, 'deleted on the second instance');
  for (const path of [`/${bucketName}/small.txt`, `/Download/FromKey/${fileKey}`]) {
    const refused = await download(firstUrl, path);
    t.equal(refused.status, 404, `${path}: 404 on the first instance`);
    t.same(refused.json, NOT_FOUND);
  }

  const replaced = await upload({ baseUrl: secondUrl, before: query, fileName: 'small.txt', size: 1000 });
  t.equal(replaced.body.Code, 0);
  t.equal((await download(firstUrl, `/${bucketName}/small.txt`)).sha256, replaced.sha256, 'the new file’s bytes under the old name');
});
