import t, { type Test } from 'tap';
import sharp from 'sharp';
import { sweepOrphans, sweepOrphanVariants } from '../src/services/orphans.js';
import { sweepExpired } from '../src/services/expiry.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { download } from './helpers/download.js';
import { makeHugePng, makeJpeg, makePng, uploadBytes, variantRows } from './helpers/images.js';
import { postForm, startService, testDatabase, testStorageBackend, type TestService } from './helpers/service.js';
import { putBytes, readBytes, storedKeys } from './helpers/stored-files.js';

// Image variants in the storage backend (CONTRACT section 16): made once, shared by instances,
// removed with their file, bounded by IMAGE_CACHE_BYTES. Runs on both backends (TEST_STORAGE_BACKEND).

async function setup(t: Test, env: Record<string, string> = {}) {
  const service = await startService(t, { env });
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token, { name: uniqueBucketName('var'), openToRead: true });
  const put = (name: string, bytes: Buffer) => uploadBytes(service, owner.token, bucketId, name, bytes);
  return { service, baseUrl, owner, bucketId, put };
}

async function metric(service: TestService, name: string, labels: string): Promise<number> {
  const text = (await service.app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = text.split('\n').find((entry) => entry.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** Once the variants answered so far are stored and recorded (that happens just after their first answer). */
const settled = (service: TestService) => service.app.images!.settled();

const rendered = (service: TestService) => metric(service, 'filestore_image_renders_total', 'outcome="rendered"');
const fromStore = (service: TestService) => metric(service, 'filestore_image_variants_served_total', 'from="store"');

/** Every variant key of the file, with whether the store holds its bytes. */
async function variantsInStore(service: TestService, keys: readonly string[]) {
  return Promise.all(keys.map(async (key) => (await readBytes(service.app.storage, key)) !== undefined));
}

t.test(`concurrent first requests make one render and get identical bytes; a second instance serves it from the store (${testStorageBackend})`, async (t) => {
  const { service, baseUrl, put } = await setup(t);
  const { path, fileKey } = await put('shared.png', await makePng({ width: 1200, height: 900, fill: 'noise' }));
  const before = await rendered(service);
  const answers = await Promise.all(Array.from({ length: 8 }, () => download(baseUrl, `${path}?w=300&format=webp`)));
  t.same(new Set(answers.map((answer) => answer.status)), new Set([200]));
  t.equal(new Set(answers.map((answer) => answer.sha256)).size, 1, 'identical bytes');
  t.equal(await rendered(service), before + 1, 'one render for eight requests');
  await settled(service);
  const rows = await variantRows(service, fileKey);
  t.equal(rows.length, 1, 'one variant recorded');
  t.equal(Number(rows[0]!.size_bytes), answers[0]!.body.length, 'with its size');
  t.ok((await readBytes(service.app.storage, rows[0]!.variant_key))?.equals(answers[0]!.body), 'its bytes in the store');

  const again = await download(baseUrl, `${path}?w=300&format=webp`);
  t.equal(again.sha256, answers[0]!.sha256);
  t.equal(await rendered(service), before + 1, 'not rendered again');
  t.ok((await fromStore(service)) >= 1, 'served from the store');

  const second = await startService(t, { database: await (await testDatabase()).openAnother(), env: { STORAGE_DIR: service.config.storageDir } });
  const secondUrl = await second.listen();
  const there = await download(secondUrl, `${path}?w=300&format=webp`);
  t.same([there.status, there.sha256, there.headers.etag], [200, answers[0]!.sha256, answers[0]!.headers.etag], 'the other instance serves the same variant');
  t.equal(await rendered(second), 0, 'without rendering it');
  t.equal(await fromStore(second), 1);
});

t.test('a kept variant whose bytes the store lost is made again', async (t) => {
  const { service, baseUrl, put } = await setup(t);
  const { path, fileKey } = await put('lost.jpg', await makeJpeg({ width: 300, height: 300 }));
  const first = await download(baseUrl, `${path}?w=100`);
  await settled(service);
  const [row] = await variantRows(service, fileKey);
  await service.app.storage.remove([row!.variant_key]);
  const again = await download(baseUrl, `${path}?w=100`);
  t.same([again.status, again.sha256], [200, first.sha256], 'the same bytes, made again');
  await settled(service);
  t.ok(await readBytes(service.app.storage, row!.variant_key), 'and kept again');
});

t.test('variants go with their file: DeleteFile, DeleteBucket, DeleteApp, expiry', async (t) => {
  const { service, baseUrl, owner, bucketId, put } = await setup(t);
  const image = await makePng({ width: 200, height: 200 });
  const withVariants = async (name: string, target = put) => {
    const file = await target(name, image);
    for (const query of ['w=50', 'w=60&format=webp', 'square=true&h=30&format=jpeg']) t.equal((await download(baseUrl, `${file.path}?${query}`)).status, 200);
    await settled(service);
    const keys = (await variantRows(service, file.fileKey)).map((row) => row.variant_key);
    t.equal(keys.length, 3, `${name}: three variants`);
    t.same(await variantsInStore(service, keys), [true, true, true], 'in the store');
    return { ...file, keys };
  };
  const gone = async (keys: string[], what: string) => {
    const rows = await service.app.db.selectFrom('image_variants').select('variant_key').where('variant_key', 'in', keys).execute();
    t.same(rows, [], `${what}: no variant row`);
    t.same(await variantsInStore(service, keys), [false, false, false], `${what}: no variant bytes in the store`);
  };

  const deleted = await withVariants('deleted.png');
  const kept = await withVariants('kept.png');
  t.equal((await postForm(service.app, '/API/DeleteFile', { AccessToken: owner.token, FileKey: deleted.fileKey })).json().Code, 0);
  await gone(deleted.keys, 'DeleteFile');
  t.same(await variantsInStore(service, kept.keys), [true, true, true], 'another file keeps its variants');

  const expiring = await withVariants('expiring.png');
  await service.app.db.updateTable('files').set({ expires_at: new Date(Date.now() - 1000) }).where('file_key', '=', expiring.fileKey).execute();
  t.equal((await download(baseUrl, `${expiring.path}?w=50`)).status, 404, 'an expired file’s variant is not served');
  await sweepExpired(service.context());
  await gone(expiring.keys, 'expiry');

  t.equal((await postForm(service.app, '/API/DeleteBucket', { AccessToken: owner.token, BucketId: bucketId })).json().Code, 0);
  await gone(kept.keys, 'DeleteBucket');

  const other = await service.newApp();
  const otherBucket = await createBucket(service, other.token, { name: uniqueBucketName('var'), openToRead: true });
  const ofApp = await withVariants('app.png', (name, bytes) => uploadBytes(service, other.token, otherBucket, name, bytes));
  t.equal((await postForm(service.app, '/API/DeleteApp', { AccessToken: other.token, AppId: other.appId })).json().Code, 0);
  await gone(ofApp.keys, 'DeleteApp');
});

t.test('the orphan sweep removes variants left without their file, and variant bytes without a row', async (t) => {
  const { service, baseUrl, put } = await setup(t);
  const { path, fileKey } = await put('orphaned.png', await makePng({ width: 100, height: 100 }));
  await download(baseUrl, `${path}?w=40`);
  await settled(service);
  const [row] = await variantRows(service, fileKey);
  // The file's row gone without dropBytes, as after a crash between the two.
  const { storage_key } = await service.app.db.deleteFrom('files').where('file_key', '=', fileKey).returning('storage_key').executeTakeFirstOrThrow();
  t.equal(await sweepOrphanVariants(service.app), 1);
  t.same(await service.app.db.selectFrom('image_variants').selectAll().where('variant_key', '=', row!.variant_key).execute(), []);
  t.equal(await readBytes(service.app.storage, row!.variant_key), undefined, 'its bytes are gone');

  const kept = await put('kept.png', await makePng({ width: 100, height: 100 }));
  await download(baseUrl, `${kept.path}?w=40`);
  await service.app.images!.settled();
  const [keptRow] = await variantRows(service, kept.fileKey);
  const unrecorded = await putBytes(service.app.storage, Buffer.from('a variant whose row was never written'));
  await sweepOrphans(service.app, 0);
  const left = await storedKeys(service.app.storage);
  t.notOk(left.includes(unrecorded), 'bytes without a row are removed');
  t.notOk(left.includes(storage_key), 'so are the orphaned file’s own');
  t.ok(left.includes(keptRow!.variant_key), 'a recorded variant is kept');
  t.equal(await sweepOrphanVariants(service.app), 0, 'nothing more to sweep');
});

t.test('IMAGE_CACHE_BYTES: the least recently served variants go first', async (t) => {
  const sizes = await Promise.all([100, 101, 102].map(async (width) => (await sharp(await makePng({ width: 400, height: 400, fill: 'noise' })).resize(width).webp().toBuffer()).length));
  // Room for about two of the three variants.
  const budget = Math.max(...sizes) * 2 + 200;
  const { service, baseUrl, put } = await setup(t, { IMAGE_CACHE_BYTES: String(budget) });
  const { path, fileKey } = await put('budget.png', await makePng({ width: 400, height: 400, fill: 'noise' }));
  const keyOf = async (width: number) => {
    const before = new Set((await variantRows(service, fileKey)).map((row) => row.variant_key));
    t.equal((await download(baseUrl, `${path}?w=${width}&format=webp`)).status, 200);
    await settled(service);
    return (await variantRows(service, fileKey)).map((row) => row.variant_key).find((key) => !before.has(key));
  };
  const a = await keyOf(100);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const b = await keyOf(101);
  await new Promise((resolve) => setTimeout(resolve, 20));
  // a served again: now b is the least recently used.
  await download(baseUrl, `${path}?w=100&format=webp`);
  await service.app.images!.flushTouches();
  const c = await keyOf(102);
  const rows = (await variantRows(service, fileKey)).map((row) => row.variant_key);
  t.same(new Set(rows), new Set([a, c]), 'b, served longest ago, was removed');
  t.same(await variantsInStore(service, [a!, b!, c!]), [true, false, true], 'from the store too');
  const total = (await variantRows(service, fileKey)).reduce((sum, row) => sum + Number(row.size_bytes), 0);
  t.ok(total <= budget, `what is kept (${total} bytes) fits in IMAGE_CACHE_BYTES (${budget})`);
});

t.test('past IMAGE_CONCURRENCY and its queue: 503 with Retry-After, and nothing else is held up', async (t) => {
  const { baseUrl, put } = await setup(t, { IMAGE_CONCURRENCY: '1', IMAGE_QUEUE_LENGTH: '1' });
  const { path } = await put('busy.png', await makePng({ width: 2500, height: 2500, fill: 'noise' }));
  const { path: small } = await put('small.txt', Buffer.from('a small download'));
  const asked = [100, 101, 102, 103, 104].map((width) => download(baseUrl, `${path}?w=${width}`));
  const plain = await download(baseUrl, small);
  t.equal(plain.status, 200, 'a download meanwhile is answered');
  const answers = await Promise.all(asked);
  const busy = answers.filter((answer) => answer.status === 503);
  t.equal(answers.filter((answer) => answer.status === 200).length, 2, 'one rendering, one waiting');
  t.equal(busy.length, 3, 'the rest turned away');
  t.same(busy[0]!.json, { Code: -1, Message: 'Too many images are being resized right now; try again shortly.' });
  t.equal(busy[0]!.headers['retry-after'], '1');
  t.equal((await download(baseUrl, `${path}?w=104`)).status, 200, 'asked again, it is made');
});

t.test('a 144-megapixel PNG is served unchanged, never decoded', async (t) => {
  const { service, baseUrl, put } = await setup(t);
  const huge = makeHugePng(12_000, 12_000);
  const header = await sharp(huge).metadata();
  t.same([header.width, header.height], [12_000, 12_000], 'a real 144-megapixel PNG');
  const { path, fileKey } = await put('huge.png', huge);
  const before = process.memoryUsage().rss;
  const answers = await Promise.all([`${path}?w=100`, `${path}?format=webp`, `${path}?square=true&w=64`].map((url) => download(baseUrl, url)));
  const grown = process.memoryUsage().rss - before;
  await settled(service);
  for (const answer of answers) {
    t.equal(answer.status, 200);
    t.ok(answer.body.equals(huge), 'the stored bytes');
    t.equal(answer.headers['content-type'], 'image/png');
  }
  t.ok(grown < 64 * 1024 * 1024, `memory stays flat: ${Math.round(grown / 1024 / 1024)} MiB more (its pixels would take 137 MiB)`);
  t.equal(await metric(service, 'filestore_image_renders_total', 'outcome="rendered"'), 0, 'nothing rendered');
  t.same(await variantRows(service, fileKey), []);
});
