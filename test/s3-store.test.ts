import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { createS3Client } from '../src/storage/s3/client.js';
import { S3Store, type S3StoreOptions } from '../src/storage/s3/store.js';
import { blobStoreContract, randomChunks, streamOf } from './helpers/blob-store-contract.js';
import { s3TestConfig, testBucketName, whyNoS3 } from './helpers/s3.js';
import { isStorageError } from '../src/storage/errors.js';
import { incompleteWrites, putBytes, readBytes, storedKeys } from './helpers/stored-files.js';

const MiB = 1024 * 1024;
/** The smallest part S3 takes, so the tests' bodies span several parts. */
const PART_SIZE = 5 * MiB;

async function newStore(t: Test, options: Partial<S3StoreOptions> = {}, bucket = testBucketName(t)): Promise<S3Store> {
  const client = createS3Client(s3TestConfig(bucket));
  t.teardown(() => client.destroy());
  const store = new S3Store(client, { bucket, prefix: '', partSize: PART_SIZE, concurrency: 2, partSlots: 3, instanceId: 'test-instance', ...options });
  await store.prepare();
  return store;
}

t.test('S3 store', { skip: whyNoS3() }, async (t) => {
  t.test('the BlobStore contract', async (t) => blobStoreContract(t, (t) => newStore(t), { openWriteBytes: PART_SIZE + MiB }));

  t.test('the BlobStore contract, under a key prefix', async (t) => blobStoreContract(t, (t) => newStore(t, { prefix: 'service/files/' }), { openWriteBytes: PART_SIZE + MiB }));

  t.test('objects are stored under <prefix><first two>/<key>, the disk layout', async (t) => {
    const bucket = testBucketName(t);
    const store = await newStore(t, { prefix: 'p/' }, bucket);
    const key = await putBytes(store, Buffer.from('laid out'));
    const client = createS3Client(s3TestConfig(bucket));
    t.teardown(() => client.destroy());
    const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
    const listing = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
    t.same(listing.Contents?.map((object) => object.Key), [`p/${key.slice(0, 2)}/${key}`]);
  });

  t.test('uploads that share one part slot between them each store their own bytes', async (t) => {
    const store = await newStore(t, { partSlots: 1, concurrency: 3 });
    const bodies = [1, 2, 3].map((n) => randomBytes(n * PART_SIZE + 1234));
    const keys = await Promise.all(bodies.map((body) => putBytes(store, body)));
    for (const [i, key] of keys.entries()) t.ok((await readBytes(store, key))?.equals(bodies[i]!), `upload ${i + 1} of ${i + 2} parts reads back whole`);
    t.same(await incompleteWrites(store), [], 'every multipart upload completed');
  });

  t.test('a stalled upload that holds the only part slot does not hold back another', async (t) => {
    const store = await newStore(t, { partSlots: 1, concurrency: 3 });
    const stalled = new Readable({ read() {} });
    const stalledBody = randomBytes(PART_SIZE / 2);
    stalled.push(stalledBody);
    const stalledWrite = store.write(stalled, { maxBytes: 10 * PART_SIZE });
    // The stalled upload is filling its part: the one slot is taken.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const body = randomBytes(3 * PART_SIZE + 1234);
    const key = await putBytes(store, body);
    t.ok((await readBytes(store, key))?.equals(body), 'an upload of four parts completes while the other is stalled');
    const rest = randomBytes(PART_SIZE);
    stalled.push(rest);
    stalled.push(null);
    const written = await stalledWrite;
    await written.commit();
    t.ok((await readBytes(store, written.key))?.equals(Buffer.concat([stalledBody, rest])), 'the stalled upload completes once its client goes on');
    t.same(await incompleteWrites(store), [], 'every multipart upload completed');
  });

  t.test('a write that fails after some parts were sent aborts its multipart upload', async (t) => {
    const store = await newStore(t);
    const boom = new Error('connection reset');
    // 200 chunks of 64 KiB: two whole parts are sent before the failure.
    const error = await store.write(streamOf(randomChunks(16 * MiB), { count: 200, error: boom }), { maxBytes: 100 * MiB }).catch((error: unknown) => error);
    t.equal(error, boom);
    t.same(await incompleteWrites(store), [], 'no incomplete upload');
    t.same(await storedKeys(store), [], 'no object');

    const tooLarge = await store.write(streamOf(randomChunks(12 * MiB)), { maxBytes: 11 * MiB }).catch((error: unknown) => error);
    t.ok(isStorageError(tooLarge, 'too-large'), 'past maxBytes after two parts: too-large');
    t.same(await incompleteWrites(store), [], 'no incomplete upload');
    t.same(await storedKeys(store), [], 'no object');
  });

  t.test("removeIncompleteWritesOf aborts one instance's multipart uploads and nothing of another's", async (t) => {
    const bucket = testBucketName(t);
    const dead = await newStore(t, { instanceId: 'dead-instance' }, bucket);
    const live = await newStore(t, { instanceId: 'live-instance' }, bucket);
    const sources = [dead, live].map((store) => {
      const source = new Readable({ read() {} });
      source.push(randomBytes(PART_SIZE + MiB));
      return { source, outcome: store.write(source, { maxBytes: 100 * MiB }).catch((error: unknown) => error) };
    });
    for (let i = 0; i < 200 && (await incompleteWrites(live)).length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const [deadUpload, liveUpload] = await incompleteWrites(live).then((ids) => ids.sort());
    t.ok(deadUpload && liveUpload, 'both instances have an upload in progress');

    await live.removeIncompleteWritesOf('dead-instance');
    const client = createS3Client(s3TestConfig(bucket));
    t.teardown(() => client.destroy());
    const left = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    t.equal(left.Uploads?.length, 1, "only the live instance's upload is left");
    const markers = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'incomplete/' }));
    t.same(
      markers.Contents?.map((object) => object.Key?.split('/')[1]),
      ['live-instance'],
      "the dead instance's markers are gone, the live one's kept",
    );

    // The live write goes on and commits whole.
    sources[1]!.source.push(null);
    const write = (await sources[1]!.outcome) as { commit(): Promise<void>; key: string };
    await write.commit();
    t.equal((await readBytes(live, write.key))?.length, PART_SIZE + MiB, 'the live upload completes whole');
    sources[0]!.source.push(null);
    const deadOutcome = await sources[0]!.outcome;
    if (!(deadOutcome instanceof Error)) await (deadOutcome as { abort(): Promise<void> }).abort();
    t.same(await incompleteWrites(live), [], 'no upload is left');
    const after = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'incomplete/' }));
    t.same(after.Contents ?? [], [], 'no marker is left');
  });

  t.test('listings leave alone what the store did not write', async (t) => {
    const bucket = testBucketName(t);
    const store = await newStore(t, { prefix: 'mine/' }, bucket);
    const key = await putBytes(store, Buffer.from('stored'));
    const client = createS3Client(s3TestConfig(bucket));
    t.teardown(() => client.destroy());
    for (const Key of ['mine/ab/cd0000', 'mine/ab/ab.txt', 'mine/README', 'other/ab/abcdef', `${key.slice(0, 2)}/${key}`]) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key, Body: 'x' }));
    }
    t.same(await storedKeys(store), [key]);
  });

  t.test('listObjects gives pages of at most pageSize', async (t) => {
    const store = await newStore(t, { pageSize: 3 });
    const keys: string[] = [];
    for (let i = 0; i < 7; i++) keys.push(await putBytes(store, Buffer.from(`file ${i}`)));
    const pages: number[] = [];
    for await (const page of store.listObjects()) pages.push(page.length);
    t.ok(pages.every((size) => size <= 3) && pages.length >= 3, `pages: ${pages.join(', ')}`);
    t.same(await storedKeys(store), keys.sort());
  });

  t.test('remove deletes more than one batch of keys', async (t) => {
    const store = await newStore(t);
    const keys = await Promise.all(Array.from({ length: 20 }, (_, i) => putBytes(store, Buffer.from(`n${i}`))));
    // Keys that were never stored, so the list spans two DeleteObjects calls of 1000.
    const missing = Array.from({ length: 1000 }, (_, i) => i.toString(16).padStart(32, '0'));
    await store.remove([...missing, ...keys]);
    t.same(await storedKeys(store), []);
  });

  t.test('a store that cannot be reached is unavailable, and start-up names S3_BUCKET', async (t) => {
    const bucket = 'never-created-bucket';
    const client = createS3Client(s3TestConfig(bucket, { S3_ENDPOINT: 'http://127.0.0.1:9' }));
    t.teardown(() => client.destroy());
    const store = new S3Store(client, { bucket, prefix: '', partSize: PART_SIZE, concurrency: 2, partSlots: 3, instanceId: 'test-instance' });
    await t.rejects(store.checkWritable(), { name: 'StorageError', kind: 'unavailable' });
    await t.rejects(store.open('f'.repeat(32)), { name: 'StorageError', kind: 'unavailable' });
    await t.rejects(store.write(streamOf(randomChunks(6 * MiB)), { maxBytes: 10 * MiB }), { name: 'StorageError', kind: 'unavailable' });
    await t.rejects(store.prepare(), { message: /^S3_BUCKET "never-created-bucket" could not be checked: / });
  });

  t.test('refused credentials are unavailable, and start-up says what the store said', async (t) => {
    const bucket = testBucketName(t);
    const client = createS3Client(s3TestConfig(bucket, { S3_SECRET_ACCESS_KEY: 'not-the-secret-key-at-all' }));
    t.teardown(() => client.destroy());
    const store = new S3Store(client, { bucket, prefix: '', partSize: PART_SIZE, concurrency: 2, partSlots: 3, instanceId: 'test-instance' });
    const error = (await store.prepare().catch((error: unknown) => error)) as Error;
    t.match(error.message, /^S3_BUCKET "test-[0-9a-f]+" (could not be checked|does not exist and could not be created): .*HTTP 403/);
    t.notMatch(error.message, /not-the-secret-key-at-all/, 'the secret is not in the message');
    await t.rejects(store.checkWritable(), { name: 'StorageError', kind: 'unavailable' });
  });
});
