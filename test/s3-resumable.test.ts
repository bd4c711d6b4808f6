import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListMultipartUploadsCommand, ListObjectsV2Command, ListPartsCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import t, { type Test } from 'tap';
import { createBucket } from './helpers/buckets.js';
import { startService, type TestService } from './helpers/service.js';
import { s3ServiceEnv, s3TestConfig, testBucketName, whyNoS3 } from './helpers/s3.js';
import { metadata, patchThenDrop, tusRequest } from './helpers/tus.js';
import { sweepOrphans } from '../src/jobs/orphan-sweep.js';
import { sweepExpiredResumables, sweepOrphanResumables } from '../src/services/resumable-uploads.js';
import { createS3Client, createS3Store } from '../src/storage/s3-client.js';
import { S3ResumableBytes } from '../src/storage/s3-resumable-bytes.js';
import type { S3Store } from '../src/storage/s3-store.js';

const MiB = 1024 * 1024;
const OCTETS = 'application/offset+octet-stream';
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

interface Instance {
  service: TestService;
  base: string;
}

/** Two instances on one database and one bucket, in parts of 5 MiB (S3's minimum). */
async function twoInstances(t: Test): Promise<{ a: Instance; b: Instance; bucket: string; token: string; bucketId: number }> {
  const bucket = testBucketName(t);
  const env = s3ServiceEnv(bucket, { S3_PART_SIZE_BYTES: String(5 * MiB) });
  const a = await startService(t, { env });
  const b = await startService(t, { env });
  const instances = { a: { service: a, base: await a.listen() }, b: { service: b, base: await b.listen() } };
  const { token } = await a.newApp();
  const bucketId = await createBucket(a, token, { openToRead: true });
  return { ...instances, bucket, token, bucketId };
}

/** Where an upload's bytes go in the bucket: its multipart upload is begun at its file's object key, which is its id. */
const objectKeyOf = (id: string) => `${id.slice(0, 2)}/${id}`;

/** A fresh bucket, created by a service started on it, with the client, file store and resumable store options over it. */
async function freshBucket(t: Test, partSize: number) {
  const bucket = testBucketName(t);
  await startService(t, { env: s3ServiceEnv(bucket) });
  const client = createS3Client(s3TestConfig(bucket));
  t.teardown(() => client.destroy());
  const store = createS3Store(s3TestConfig(bucket), 'test');
  return { bucket, client, store, options: { bucket, prefix: '', partSize, concurrency: 2, maxUploadBytes: 64 * MiB, store } };
}

/** What the bucket holds for resumable uploads: incomplete multipart uploads anywhere, and objects under resumable/. */
async function resumableLeftovers(bucket: string): Promise<{ uploads: string[]; objects: string[] }> {
  const client = createS3Client(s3TestConfig(bucket));
  try {
    const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    const objects = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'resumable/' }));
    return { uploads: (uploads.Uploads ?? []).map((u) => u.Key!), objects: (objects.Contents ?? []).map((o) => o.Key!) };
  } finally {
    client.destroy();
  }
}

async function create(base: string, token: string, bucketId: number, size: number, fileName: string): Promise<string> {
  const created = await tusRequest(`${base}/API/ResumableUpload`, 'POST', {
    Authorization: `Bearer ${token}`,
    'Upload-Length': size,
    'Upload-Metadata': metadata({ filename: fileName, BucketId: String(bucketId), AliveDays: '3' }),
  });
  if (created.status !== 201) throw new Error(`creation: ${created.status} ${created.body}`);
  return created.headers.location!.split('/').pop()!;
}

/** The file's row: its storage key and the ETag its download answers with. */
async function storedFile(instance: Instance, fileKey: unknown): Promise<{ storageKey: string; etag: string | null }> {
  const row = await instance.service.app.db.selectFrom('files').select('storage_key').where('file_key', '=', Number(fileKey)).executeTakeFirstOrThrow();
  const etag = (await fetch(`${instance.base}/Download/FromKey/${fileKey}`, { method: 'HEAD' })).headers.get('etag');
  return { storageKey: row.storage_key, etag };
}

/** Completes what `bytes` holds for `id` and reads the object back; the object is removed afterwards. */
async function finishAndRead(bytes: S3ResumableBytes, store: S3Store, id: string): Promise<Buffer> {
  const write = await bytes.finish(id, { maxBytes: 64 * MiB });
  await write.commit();
  const chunks: Buffer[] = [];
  for await (const chunk of (await store.open(write.key)).stream) chunks.push(chunk as Buffer);
  await store.remove([write.key]);
  return Buffer.concat(chunks);
}

async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`download ${url}: ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

t.test('resumable uploads on STORAGE_BACKEND=s3', { skip: whyNoS3() }, async (t) => {
  t.test('a multi-part upload dropped mid-PATCH resumes on a second instance and downloads byte-identical', async (t) => {
    const { a, b, bucket, token, bucketId } = await twoInstances(t);
    const content = randomBytes(13 * MiB + 5);
    const id = await create(a.base, token, bucketId, content.length, 'journey.bin');
    const onA = `${a.base}/API/ResumableUpload/${id}`;
    const onB = `${b.base}/API/ResumableUpload/${id}`;

    const first = await tusRequest(onA, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, content.subarray(0, MiB));
    t.equal(first.status, 204, first.body);
    t.equal(first.headers['upload-offset'], String(MiB), 'a short first chunk, kept below the part size');

    await patchThenDrop(onA, MiB, content.subarray(MiB), 7 * MiB);
    let offset = 0;
    for (let i = 0; i < 100 && offset <= MiB; i++) {
      await sleep(100);
      offset = Number((await tusRequest(onB, 'HEAD', {})).headers['upload-offset']);
    }
    t.ok(offset > 5 * MiB && offset <= 8 * MiB, `HEAD on the other instance reports the bytes that arrived before the drop (${offset})`);
    t.same((await resumableLeftovers(bucket)).uploads, [objectKeyOf(id)], 'the acknowledged bytes are a multipart upload at the object key the file will have');

    // The rest in one PATCH of more than a part, on the instance that never saw the upload's bytes.
    const last = await tusRequest(onB, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': offset }, content.subarray(offset));
    t.equal(last.status, 204, last.body);
    t.equal(last.headers['upload-offset'], String(content.length));
    const fileKey = last.headers['upload-file-key'];
    t.equal(sha256(await download(`${a.base}/Download/FromKey/${fileKey}`)), sha256(content), 'byte-identical through the download route');
    t.same(await storedFile(a, fileKey), { storageKey: id, etag: `"${sha256(content)}"` }, 'the multipart upload became the file in place; hashed from the store, as no instance saw every byte');
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] }, 'no multipart upload and nothing under resumable/ is left');
  });

  t.test('on one instance: completed in place with the sha256 carried from PATCH to PATCH; a name taken meanwhile gets 409 and leaves nothing', async (t) => {
    const { a, bucket, token, bucketId } = await twoInstances(t);
    const content = randomBytes(12 * MiB + 3);
    const id = await create(a.base, token, bucketId, content.length, 'one.bin');
    const rival = await create(a.base, token, bucketId, content.length, 'one.bin');
    // PATCHes that do not fall on part boundaries: a tail is kept, then carried into the next part.
    for (const [from, to] of [[0, 4 * MiB], [4 * MiB, 9 * MiB + 1], [9 * MiB + 1, content.length]] as const) {
      for (const upload of [id, rival]) {
        const answer = await tusRequest(`${a.base}/API/ResumableUpload/${upload}`, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': from }, content.subarray(from, to));
        if (upload === rival && to === content.length) {
          t.equal(answer.status, 409, 'the name was taken by the first upload meanwhile');
          t.same(JSON.parse(answer.body), { Code: -1, Message: 'There already exists a file with that name.' });
        } else {
          t.equal(answer.status, 204, answer.body);
        }
        if (upload === id && to === content.length) {
          t.same(await storedFile(a, answer.headers['upload-file-key']), { storageKey: id, etag: `"${sha256(content)}"` }, 'the multipart upload became the file in place');
          t.equal(sha256(await download(`${a.base}/Download/FromKey/${answer.headers['upload-file-key']}`)), sha256(content), 'byte-identical');
        }
      }
    }
    const client = createS3Client(s3TestConfig(bucket));
    t.teardown(() => client.destroy());
    const objects = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
    t.same((objects.Contents ?? []).map((object) => object.Key), [objectKeyOf(id)], 'one object, the file; nothing of the refused upload');
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] }, 'no multipart upload left');
  });

  t.test('while an upload becomes a file, the orphan sweeps leave its bytes alone however old they are', async (t) => {
    const { a, b, bucket, token, bucketId } = await twoInstances(t);
    const content = randomBytes(40 * MiB + 7);
    const id = await create(a.base, token, bucketId, content.length, 'swept.bin');
    const first = await tusRequest(`${a.base}/API/ResumableUpload/${id}`, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, content.subarray(0, 6 * MiB));
    t.equal(first.status, 204, first.body);
    // The rest on the other instance, which has no running hash: it completes, reads back and hashes, then commits.
    let settled = false;
    const last = tusRequest(`${b.base}/API/ResumableUpload/${id}`, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 6 * MiB }, content.subarray(6 * MiB)).finally(
      () => (settled = true),
    );
    // Sweeps that judge everything old, one after another on the other instance, until the PATCH is answered.
    let sweeps = 0;
    const removed = { incompleteWritesRemoved: 0, objectsRemoved: 0 };
    while (!settled) {
      const result = await sweepOrphans(a.service.app.db, a.service.app.storage, -60_000);
      removed.incompleteWritesRemoved += result.incompleteWritesRemoved;
      removed.objectsRemoved += result.objectsRemoved;
      t.equal(await sweepOrphanResumables(a.service.app.resumable, -60_000), 0);
      sweeps++;
    }
    const answer = await last;
    t.equal(answer.status, 204, answer.body);
    t.ok(sweeps > 1, `${sweeps} sweeps ran while the last PATCH was answered`);
    t.same(removed, { incompleteWritesRemoved: 0, objectsRemoved: 0 }, 'none removed anything');
    t.equal(sha256(await download(`${a.base}/Download/FromKey/${answer.headers['upload-file-key']}`)), sha256(content), 'byte-identical');
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] });
    t.equal(await a.service.app.db.selectFrom('resumable_uploads').select('upload_id').executeTakeFirst(), undefined, 'the upload’s state is gone once it is a file');
  });

  t.test('an upload smaller than one part goes up in chunks over both instances', async (t) => {
    const { a, b, bucket, token, bucketId } = await twoInstances(t);
    const content = randomBytes(3 * MiB + 17);
    const id = await create(a.base, token, bucketId, content.length, 'small.bin');
    let offset = 0;
    for (const [i, end] of [MiB, 2 * MiB, content.length].entries()) {
      const base = i % 2 === 0 ? b.base : a.base;
      const answer = await tusRequest(`${base}/API/ResumableUpload/${id}`, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': offset }, content.subarray(offset, end));
      t.equal(answer.status, 204, answer.body);
      offset = end;
      if (end === content.length) {
        const fileKey = answer.headers['upload-file-key'];
        t.equal(sha256(await download(`${b.base}/Download/FromKey/${fileKey}`)), sha256(content), 'byte-identical');
        t.same(await storedFile(b, fileKey), { storageKey: id, etag: `"${sha256(content)}"` }, 'stored under the upload’s key with the sha256 of its bytes');
      }
    }
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] }, 'nothing left under resumable/');
  });

  t.test('termination and expiry leave no incomplete multipart upload', async (t) => {
    const { a, b, bucket, token, bucketId } = await twoInstances(t);
    const content = randomBytes(6 * MiB);
    const ids = [];
    for (const name of ['ended.bin', 'abandoned.bin']) {
      const id = await create(a.base, token, bucketId, content.length + 1, name);
      const patched = await tusRequest(`${a.base}/API/ResumableUpload/${id}`, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, content);
      t.equal(patched.status, 204, patched.body);
      ids.push(id);
    }
    t.equal((await resumableLeftovers(bucket)).uploads.length, 2, 'a multipart upload each');

    t.equal((await tusRequest(`${b.base}/API/ResumableUpload/${ids[0]}`, 'DELETE', {})).status, 204);
    t.same((await resumableLeftovers(bucket)).uploads, [objectKeyOf(ids[1]!)], 'the terminated one is aborted');

    await a.service.app.db.updateTable('resumable_uploads').set({ expires_at: new Date(Date.now() - 1000) }).execute();
    t.equal(await sweepExpiredResumables(a.service.app.resumable), 1);
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] }, 'the expired one is aborted and its tail removed');
  });

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

  t.test('the file orphan sweep leaves a resumable upload with state alone, and sweeps it once its state is gone', async (t) => {
    const { a, bucket, token, bucketId } = await twoInstances(t);
    const id = await create(a.base, token, bucketId, 6 * MiB + 1, 'kept.bin');
    const patched = await tusRequest(`${a.base}/API/ResumableUpload/${id}`, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, randomBytes(6 * MiB));
    t.equal(patched.status, 204, patched.body);
    t.same(await sweepOrphans(a.service.app.db, a.service.app.storage, 0), { incompleteWritesRemoved: 0, objectsRemoved: 0 }, 'not taken for a file’s leftovers');
    t.equal(await sweepOrphanResumables(a.service.app.resumable, 0), 0, 'an upload with state is no orphan');
    t.same(await resumableLeftovers(bucket), { uploads: [objectKeyOf(id)], objects: [`resumable/${id}.tail`] });

    // A crash between the bytes and the row: bytes without state.
    await a.service.app.db.deleteFrom('resumable_uploads').execute();
    t.same(await sweepOrphans(a.service.app.db, a.service.app.storage, 0), { incompleteWritesRemoved: 1, objectsRemoved: 0 }, 'its multipart upload is an incomplete write without an upload');
    t.equal(await sweepOrphanResumables(a.service.app.resumable, 0), 1, 'its tail is a resumable orphan');
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] });
  });
});
