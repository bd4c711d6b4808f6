import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListMultipartUploadsCommand, ListPartsCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import t from 'tap';
import { s3TestConfig, startS3Relay, whyNoS3 } from './helpers/s3.js';
import { finishAndRead, freshBucket, objectKeyOf, resumableLeftovers } from './helpers/s3-resumable.js';
import { createS3Client } from '../src/storage/s3/client.js';
import { S3ResumableBytes } from '../src/storage/s3/resumable-bytes.js';

const MiB = 1024 * 1024;
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** The resumable bytes of S3, below the tus endpoint: how appends find, send and trust an upload's parts. */
t.test('resumable upload bytes on S3', { skip: whyNoS3() }, async (t) => {
  t.test('bytes stored past the acknowledged offset (a lost answer) are not stored twice', async (t) => {
    const { bucket, client, store, options } = await freshBucket(t, 5 * MiB);
    const bytes = new S3ResumableBytes(client, options);
    const id = randomBytes(16).toString('hex');
    const content = randomBytes(12 * MiB);
    await bytes.create(id);
    t.equal(await bytes.append(id, 0, Readable.from([content.subarray(0, 7 * MiB)])), 7 * MiB);
    // The state still says 0: the client sends everything again from there.
    t.equal(await bytes.append(id, 0, Readable.from([content.subarray(0, 9 * MiB)])), 9 * MiB);
    t.equal(await bytes.append(id, 9 * MiB, Readable.from([content.subarray(9 * MiB)])), content.length);
    t.equal(sha256(await finishAndRead(bytes, store, id)), sha256(content), 'each byte once, in order');
    await bytes.remove([id]);
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] });

    // Below a part: bytes past the offset are dropped before the new ones go in, even of the same length.
    const small = randomBytes(16).toString('hex');
    await bytes.create(small);
    t.equal(await bytes.append(small, 0, Readable.from([Buffer.alloc(2 * MiB, 1)])), 2 * MiB);
    t.equal(await bytes.append(small, MiB, Readable.from([Buffer.alloc(MiB, 2)])), 2 * MiB);
    t.ok((await finishAndRead(bytes, store, small)).equals(Buffer.concat([Buffer.alloc(MiB, 1), Buffer.alloc(MiB, 2)])), 'the second MiB replaced');
    await bytes.remove([small]);
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] });

    // Parts of one PATCH go in side by side: when one fails, a later one may be in already, beyond a
    // gap (here part 3, with part 2 missing). It is not counted until the gap is filled.
    const gap = randomBytes(16).toString('hex');
    const long = randomBytes(18 * MiB);
    await bytes.create(gap);
    t.equal(await bytes.append(gap, 0, Readable.from([long.subarray(0, 6 * MiB)])), 6 * MiB, 'one part and a tail');
    const [upload] = (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: objectKeyOf(gap) }))).Uploads ?? [];
    await client.send(
      new UploadPartCommand({ Bucket: bucket, Key: objectKeyOf(gap), UploadId: upload!.UploadId, PartNumber: 3, Body: long.subarray(10 * MiB, 15 * MiB), ContentLength: 5 * MiB }),
    );
    t.equal(await bytes.append(gap, 6 * MiB, Readable.from([long.subarray(6 * MiB, 8 * MiB)])), 8 * MiB, 'the part beyond the gap is not counted');
    t.equal(await bytes.append(gap, 8 * MiB, Readable.from([long.subarray(8 * MiB, 12 * MiB)])), 12 * MiB, 'part 2 fills the gap; the tail is what this PATCH brought past it');
    t.equal(await bytes.append(gap, 12 * MiB, Readable.from([long.subarray(12 * MiB)])), long.length, 'bytes already in part 3 are skipped');
    t.equal(sha256(await finishAndRead(bytes, store, gap)), sha256(long), 'each byte once, in order');
    await bytes.remove([gap]);
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] });
  });

  t.test('a body of declared length sends the parts it fills as they arrive; one cut short leaves only whole parts and the tail', async (t) => {
    const { bucket, client, store, options } = await freshBucket(t, 10 * MiB);
    const bytes = new S3ResumableBytes(client, options);
    const id = randomBytes(16).toString('hex');
    const content = randomBytes(23 * MiB);
    const inMiBs = (from: number, to: number) => Readable.from(Array.from({ length: to - from }, (_, i) => content.subarray((from + i) * MiB, (from + i + 1) * MiB)));
    const parts = async () => {
      const [upload] = (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: objectKeyOf(id) }))).Uploads ?? [];
      const listed = await client.send(new ListPartsCommand({ Bucket: bucket, Key: objectKeyOf(id), UploadId: upload!.UploadId }));
      return (listed.Parts ?? []).map((part) => [part.PartNumber, part.Size]);
    };
    await bytes.create(id);

    // Declares 12 MiB, the connection drops after 7: part 2 was being sent and is dropped, its bytes kept as the tail.
    const dropped = Readable.from(
      (async function* () {
        yield* inMiBs(0, 7);
        throw new Error('connection reset');
      })(),
    );
    t.equal(await bytes.append(id, 0, dropped, { bodyBytes: 12 * MiB }), 7 * MiB, 'every byte that arrived is kept');
    t.same(await parts(), [[1, 5 * MiB]], 'one whole part, nothing of the one cut short');
    t.same((await resumableLeftovers(bucket)).objects, [`resumable/${id}.tail`]);

    // Resumed with the rest declared: the tail and the new bytes make parts 2 to 4, the last MiB a tail again.
    t.equal(await bytes.append(id, 7 * MiB, inMiBs(7, 21), { bodyBytes: 14 * MiB }), 21 * MiB);
    t.same(await parts(), [[1, 5 * MiB], [2, 5 * MiB], [3, 5 * MiB], [4, 5 * MiB]]);
    t.equal(await bytes.append(id, 21 * MiB, inMiBs(21, 23), { bodyBytes: 2 * MiB }), content.length);
    t.equal(sha256(await finishAndRead(bytes, store, id)), sha256(content), 'each byte once, in order');
    await bytes.remove([id]);
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] });
  });

  t.test('a streamed part whose connection to the store is cut is sent again from its buffer', async (t) => {
    const { bucket, client, store, options } = await freshBucket(t, 10 * MiB);
    const relay = await startS3Relay(t);
    const relayed = createS3Client(s3TestConfig(bucket, { S3_ENDPOINT: relay.endpoint }));
    t.teardown(() => relayed.destroy());
    const bytes = new S3ResumableBytes(relayed, options);
    const id = randomBytes(16).toString('hex');
    const content = randomBytes(12 * MiB);
    await bytes.create(id);
    const body = Readable.from(
      (async function* () {
        yield content.subarray(0, 3 * MiB);
        // Part 1 is on its way to the store: its connection goes, and the store is back at once.
        await sleep(200);
        await relay.cut();
        await relay.restore();
        yield content.subarray(3 * MiB);
      })(),
    );
    t.equal(await bytes.append(id, 0, body, { bodyBytes: content.length }), content.length, 'the PATCH succeeds');
    const [upload] = (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: objectKeyOf(id) }))).Uploads ?? [];
    const listed = await client.send(new ListPartsCommand({ Bucket: bucket, Key: objectKeyOf(id), UploadId: upload!.UploadId }));
    t.same((listed.Parts ?? []).map((part) => [part.PartNumber, part.Size]), [[1, 5 * MiB], [2, 5 * MiB]], 'both parts whole');
    t.equal(sha256(await finishAndRead(bytes, store, id)), sha256(content), 'each byte once, in order');
    await bytes.remove([id]);
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] });
  });

  t.test('an instance sends its parts without listing them only while the lock count says no other request wrote the upload', async (t) => {
    const { bucket, client, store, options } = await freshBucket(t, 10 * MiB);
    const [a, b] = [new S3ResumableBytes(client, options), new S3ResumableBytes(client, options)];
    const content = randomBytes(20 * MiB);
    const other = randomBytes(5 * MiB);
    const from = (bytes: Buffer) => Readable.from([bytes]);

    // Nobody took the lock since a's append: a trusts what it left, so a part put behind its back,
    // without the lock, is overwritten rather than found.
    const trusted = randomBytes(16).toString('hex');
    await a.create(trusted);
    t.equal(await a.append(trusted, 0, from(content.subarray(0, 12 * MiB)), { lockCount: 1 }), 12 * MiB, 'two parts and a tail');
    const [upload] = (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: objectKeyOf(trusted) }))).Uploads ?? [];
    await client.send(new UploadPartCommand({ Bucket: bucket, Key: objectKeyOf(trusted), UploadId: upload!.UploadId, PartNumber: 3, Body: other.subarray(0, 5 * MiB), ContentLength: 5 * MiB }));
    t.equal(await a.append(trusted, 12 * MiB, from(content.subarray(12 * MiB, 16 * MiB)), { lockCount: 2 }), 16 * MiB);
    t.ok((await finishAndRead(a, store, trusted)).equals(content.subarray(0, 16 * MiB)), 'part 3 is the one a sent');

    // Another request took the lock in between (its answer was lost, so the offset stayed): a lists
    // the parts and finds the one it stored past the offset, whose bytes stand for those sent again.
    const listed = randomBytes(16).toString('hex');
    await a.create(listed);
    t.equal(await a.append(listed, 0, from(content.subarray(0, 12 * MiB)), { lockCount: 1 }), 12 * MiB);
    // b fills part 3 exactly, so the tail object a left (base 10 MiB) is still there, unchanged.
    t.equal(await b.append(listed, 12 * MiB, from(other.subarray(0, 3 * MiB)), { lockCount: 2 }), 15 * MiB);
    t.equal(await a.append(listed, 12 * MiB, from(content.subarray(12 * MiB)), { lockCount: 3 }), 20 * MiB);
    const expected = Buffer.concat([content.subarray(0, 12 * MiB), other.subarray(0, 3 * MiB), content.subarray(15 * MiB)]);
    t.ok((await finishAndRead(a, store, listed)).equals(expected), "part 3 is the one b sent: a found it");
    await a.remove([trusted, listed]);
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] });
  });

  t.test('an instance that has seen an upload finds the parts another instance added, and finds it gone once removed', async (t) => {
    const { bucket, client, store, options } = await freshBucket(t, 5 * MiB);
    const [a, b] = [new S3ResumableBytes(client, options), new S3ResumableBytes(client, options)];
    const id = randomBytes(16).toString('hex');
    const content = randomBytes(16 * MiB);
    await a.create(id);
    t.equal(await a.append(id, 0, Readable.from([content.subarray(0, 6 * MiB)])), 6 * MiB, 'a part and a tail, through a');
    t.equal(await b.append(id, 6 * MiB, Readable.from([content.subarray(6 * MiB, 11 * MiB)])), 11 * MiB, 'a part through b');
    t.equal(await a.append(id, 11 * MiB, Readable.from([content.subarray(11 * MiB)])), content.length, 'a finds the part b added');
    t.equal(sha256(await finishAndRead(a, store, id)), sha256(content), 'each byte once, in order');
    await a.remove([id]);

    const ended = randomBytes(16).toString('hex');
    await a.create(ended);
    t.equal(await a.append(ended, 0, Readable.from([content.subarray(0, 6 * MiB)])), 6 * MiB);
    await b.remove([ended]);
    await t.rejects(a.append(ended, 6 * MiB, Readable.from([content.subarray(6 * MiB, 12 * MiB)])), { name: 'StorageError', kind: 'not-found' });
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] }, 'nothing stored for the removed upload');
  });
});
