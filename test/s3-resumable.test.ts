import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import t, { type Test } from 'tap';
import { createBucket } from './helpers/buckets.js';
import { startService, type TestService } from './helpers/service.js';
import { s3ServiceEnv, s3TestConfig, testBucketName, whyNoS3 } from './helpers/s3.js';
import { objectKeyOf, resumableLeftovers } from './helpers/s3-resumable.js';
import { metadata, patchThenDrop, tusRequest } from './helpers/tus.js';
import { sweepOrphans } from '../src/services/orphans.js';
import { sweepExpiredResumables, sweepOrphanResumables } from '../src/services/resumable-sweeps.js';
import { createS3Client } from '../src/storage/s3/client.js';

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
      const result = await sweepOrphans({ db: a.service.app.db, storage: a.service.app.storage }, -60_000);
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


  t.test('the file orphan sweep leaves a resumable upload with state alone, and sweeps it once its state is gone', async (t) => {
    const { a, bucket, token, bucketId } = await twoInstances(t);
    const id = await create(a.base, token, bucketId, 6 * MiB + 1, 'kept.bin');
    const patched = await tusRequest(`${a.base}/API/ResumableUpload/${id}`, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, randomBytes(6 * MiB));
    t.equal(patched.status, 204, patched.body);
    t.same(await sweepOrphans({ db: a.service.app.db, storage: a.service.app.storage }, 0), { incompleteWritesRemoved: 0, objectsRemoved: 0 }, 'not taken for a file’s leftovers');
    t.equal(await sweepOrphanResumables(a.service.app.resumable, 0), 0, 'an upload with state is no orphan');
    t.same(await resumableLeftovers(bucket), { uploads: [objectKeyOf(id)], objects: [`resumable/${id}.tail`] });

    // A crash between the bytes and the row: bytes without state.
    await a.service.app.db.deleteFrom('resumable_uploads').execute();
    t.same(await sweepOrphans({ db: a.service.app.db, storage: a.service.app.storage }, 0), { incompleteWritesRemoved: 1, objectsRemoved: 0 }, 'its multipart upload is an incomplete write without an upload');
    t.equal(await sweepOrphanResumables(a.service.app.resumable, 0), 1, 'its tail is a resumable orphan');
    t.same(await resumableLeftovers(bucket), { uploads: [], objects: [] });
  });
});
