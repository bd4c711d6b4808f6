import http from 'node:http';
import t, { type Test } from 'tap';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { download } from './helpers/download.js';
import { postForm, startService, type TestService } from './helpers/service.js';
import { s3ServiceEnv, s3TestConfig, startS3Relay, testBucketName, whyNoS3 } from './helpers/s3.js';
import { CreateMultipartUploadCommand } from '@aws-sdk/client-s3';
import { sweepOrphans } from '../src/services/orphans.js';
import { newStorageKey } from '../src/storage/blob-store.js';
import { createS3Client } from '../src/storage/s3/client.js';
import { hasBytes, incompleteWrites, putBytes, readBytes, storedKeys, storeFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

const MiB = 1024 * 1024;
const UNAVAILABLE = { Code: -1, Message: 'The storage is unreachable right now; try again shortly.' };

/** A service whose bytes live in a bucket of the S3 test server, in parts of 5 MiB. */
async function s3Service(t: Test, endpoint?: string, bucket = testBucketName(t)): Promise<{ service: TestService; baseUrl: string }> {
  const env = s3ServiceEnv(bucket, { S3_PART_SIZE_BYTES: String(5 * MiB), S3_UPLOAD_CONCURRENCY: '2', ...(endpoint ? { S3_ENDPOINT: endpoint } : {}) });
  const service = await startService(t, { env });
  return { service, baseUrl: await service.listen() };
}

async function storageKeyOf(service: TestService, fileKey: number): Promise<string> {
  const row = await service.app.db.selectFrom('files').select('storage_key').where('file_key', '=', fileKey).executeTakeFirstOrThrow();
  return row.storage_key;
}

async function rowCount(service: TestService, bucketId: number): Promise<number> {
  const rows = await service.app.db.selectFrom('files').select('file_key').where('bucket_id', '=', bucketId).execute();
  return rows.length;
}

t.test('STORAGE_BACKEND=s3', { skip: whyNoS3() }, async (t) => {
  t.test('a file of several parts goes up and comes back whole, in ranges, conditionally and by HEAD', async (t) => {
    const { service, baseUrl } = await s3Service(t);
    t.match(service.app.storage.description, /^S3 bucket test-/);
    const owner = await service.newApp();
    const name = uniqueBucketName('s3');
    const bucketId = await createBucket(service, owner.token, { name, openToRead: true });
    const size = 12 * MiB + 7;
    const uploaded = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'big.bin', size });
    t.equal(uploaded.body.Code, 0, `uploaded: ${uploaded.body.Message}`);
    const fileKey = uploaded.body.FileKey as number;
    const key = await storageKeyOf(service, fileKey);
    t.same(await storedKeys(service.app.storage), [key], 'one object in the bucket');
    t.same(await incompleteWrites(service.app.storage), [], 'no multipart upload left open');
    const content = (await readBytes(service.app.storage, key))!;

    const whole = await download(baseUrl, `/${name}/big.bin`);
    t.equal(whole.status, 200);
    t.equal(whole.sha256, uploaded.sha256, 'the bytes of the upload');
    t.equal(whole.headers['content-length'], String(size));
    t.equal(whole.headers.etag, `"${uploaded.sha256}"`, 'the service’s own ETag: the sha256');

    const ranged = await download(baseUrl, `/Download/FromKey/${fileKey}`, { headers: { range: `bytes=${5 * MiB - 3}-${5 * MiB + 2}` } });
    t.equal(ranged.status, 206);
    t.equal(ranged.headers['content-range'], `bytes ${5 * MiB - 3}-${5 * MiB + 2}/${size}`);
    t.ok(ranged.body.equals(content.subarray(5 * MiB - 3, 5 * MiB + 3)), 'the range across a part boundary');

    const suffix = await download(baseUrl, `/${name}/big.bin`, { headers: { range: 'bytes=-10' } });
    t.equal(suffix.status, 206);
    t.ok(suffix.body.equals(content.subarray(size - 10)), 'the last 10 bytes');

    const beyond = await download(baseUrl, `/${name}/big.bin`, { headers: { range: `bytes=${size}-` } });
    t.equal(beyond.status, 416);
    t.equal(beyond.headers['content-range'], `bytes */${size}`);

    t.equal((await download(baseUrl, `/${name}/big.bin`, { headers: { 'if-none-match': `"${uploaded.sha256}"` } })).status, 304);
    const head = await download(baseUrl, `/${name}/big.bin`, { method: 'HEAD' });
    t.equal(head.status, 200);
    t.equal(head.headers['content-length'], String(size));
    t.equal(head.body.length, 0);
  });

  t.test('a small file and an empty one are stored in one request each and read back', async (t) => {
    const { service, baseUrl } = await s3Service(t);
    const owner = await service.newApp();
    const name = uniqueBucketName('s3');
    const bucketId = await createBucket(service, owner.token, { name, openToRead: true });
    for (const [fileName, size] of [['small.txt', 1000], ['empty.txt', 0]] as const) {
      const uploaded = await upload({ baseUrl, query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName, size });
      t.equal(uploaded.body.Code, 0, `${fileName} uploaded`);
      const back = await download(baseUrl, `/${name}/${fileName}`);
      t.equal(back.status, 200);
      t.equal(back.body.length, size);
      t.equal(back.sha256, uploaded.sha256, `${fileName}: the same bytes`);
    }
  });

  t.test('DeleteFile and DeleteBucket remove the objects from the store', async (t) => {
    const { service, baseUrl } = await s3Service(t);
    const owner = await service.newApp();
    const bucketId = await createBucket(service, owner.token, { name: uniqueBucketName('s3'), openToRead: true });
    const keys: number[] = [];
    for (const fileName of ['a.bin', 'b.bin', 'c.bin']) {
      const uploaded = await upload({ baseUrl, query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName, size: 6 * MiB });
      keys.push(uploaded.body.FileKey as number);
    }
    const storageKeys = await Promise.all(keys.map((fileKey) => storageKeyOf(service, fileKey)));
    t.same(await storedKeys(service.app.storage), [...storageKeys].sort());

    const deleted = await postForm(service.app, '/API/DeleteFile', { AccessToken: owner.token, FileKey: keys[0]! });
    t.equal(deleted.json().Code, 0);
    t.notOk(await hasBytes(service.app.storage, storageKeys[0]!), 'the deleted file’s object is gone');
    t.equal((await download(baseUrl, `/Download/FromKey/${keys[0]}`)).status, 404);

    const bucketDeleted = await postForm(service.app, '/API/DeleteBucket', { AccessToken: owner.token, BucketId: bucketId });
    t.equal(bucketDeleted.json().Code, 0);
    t.same(await storedKeys(service.app.storage), [], 'no object left in the store');
    t.equal(await rowCount(service, bucketId), 0, 'no row left');
  });

  t.test('a client that aborts its upload leaves no row, no object and no multipart upload', async (t) => {
    const { service, baseUrl } = await s3Service(t);
    const owner = await service.newApp();
    const bucketId = await createBucket(service, owner.token, { name: uniqueBucketName('s3') });
    await t.rejects(upload({ baseUrl, query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, size: 20 * MiB, abortAfterBytes: 12 * MiB }));
    // The service notices the cut connection asynchronously.
    for (let i = 0; i < 100 && (await incompleteWrites(service.app.storage)).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    t.same(await incompleteWrites(service.app.storage), [], 'the multipart upload was aborted');
    t.same(await storedKeys(service.app.storage), [], 'no object');
    t.equal(await rowCount(service, bucketId), 0, 'no row');
  });

  t.test('an unreachable store: 503 with Retry-After, /ready 503, and recovery without a restart', async (t) => {
    const relay = await startS3Relay(t);
    const { service, baseUrl } = await s3Service(t, relay.endpoint);
    const owner = await service.newApp();
    const name = uniqueBucketName('s3');
    const bucketId = await createBucket(service, owner.token, { name, openToRead: true });
    const query = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
    t.equal((await upload({ baseUrl, query, fileName: 'before.bin', size: 1000 })).body.Code, 0);
    t.equal((await download(baseUrl, '/ready')).status, 200);

    await relay.cut();
    // Past the one second for which a healthy store is trusted.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const refused = await upload({ baseUrl, query, fileName: 'during.bin', size: 7 * MiB });
    t.equal(refused.status, 503, 'upload: 503');
    t.same(refused.body, UNAVAILABLE);
    const failedDownload = await download(baseUrl, `/${name}/before.bin`);
    t.equal(failedDownload.status, 503, 'download: 503');
    t.same(failedDownload.json, UNAVAILABLE);
    t.equal(failedDownload.headers['retry-after'], '5');
    const ready = await download(baseUrl, '/ready');
    t.equal(ready.status, 503, '/ready: 503');
    t.match(ready.json?.Message, /the storage is not writable/);
    t.equal(await rowCount(service, bucketId), 1, 'the refused upload left no row');

    await relay.restore();
    t.equal((await download(baseUrl, '/ready')).status, 200, '/ready: 200 again');
    const after = await upload({ baseUrl, query, fileName: 'during.bin', size: 7 * MiB });
    t.equal(after.body.Code, 0, 'uploads work again');
    t.equal((await download(baseUrl, `/${name}/during.bin`)).sha256, after.sha256);
    t.same(await incompleteWrites(service.app.storage), [], 'nothing left open by the outage');
    t.notOk(service.logs.some((line) => line.includes(s3ServiceEnv('x').S3_SECRET_ACCESS_KEY!)), 'no secret in the logs');
  });

  t.test('an upload cut by a store outage leaves no row, and nothing in the store after the sweep', async (t) => {
    const relay = await startS3Relay(t);
    const bucket = testBucketName(t);
    const { service, baseUrl } = await s3Service(t, relay.endpoint, bucket);
    const owner = await service.newApp();
    const bucketId = await createBucket(service, owner.token, { name: uniqueBucketName('s3') });
    // About 2 s of upload; the store goes away once the first parts are in.
    const uploading = upload({ baseUrl, query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, size: 24 * MiB, chunkDelayMs: 20 });
    const observer = createS3Client(s3TestConfig(bucket));
    t.teardown(() => observer.destroy());
    const { ListMultipartUploadsCommand } = await import('@aws-sdk/client-s3');
    for (let i = 0; i < 200; i++) {
      if ((await observer.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads?.length) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await relay.cut();
    const cut = await uploading.catch((error: Error) => error);
    if (cut instanceof Error) t.pass(`the connection was closed: ${cut.message}`);
    else {
      t.equal(cut.status, 503, 'the upload: 503');
      t.same(cut.body, UNAVAILABLE);
    }
    t.equal(await rowCount(service, bucketId), 0, 'no row');

    await relay.restore();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await sweepOrphans({ db: service.app.db, storage: service.app.storage }, 0);
    t.same(await incompleteWrites(service.app.storage), [], 'no multipart upload after the sweep');
    t.same(await storedKeys(service.app.storage), [], 'no object after the sweep');
  });

  t.test('a download cut by a store outage ends in an error for the client, and the service serves the next one', async (t) => {
    const relay = await startS3Relay(t);
    const { service, baseUrl } = await s3Service(t, relay.endpoint);
    const owner = await service.newApp();
    const name = uniqueBucketName('s3');
    const bucketId = await createBucket(service, owner.token, { name, openToRead: true });
    // Far more than the socket buffers between the store and the client hold, so the cut lands mid-body.
    const size = 40 * MiB;
    const uploaded = await upload({ baseUrl, query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'big.bin', size });
    t.equal(uploaded.body.Code, 0);

    const { hostname, port } = new URL(baseUrl);
    const cut = await new Promise<{ status: number; length: string | undefined; received: number; ending: string; tail: string }>((resolve, reject) => {
      const hung = setTimeout(() => reject(new Error('the cut download neither ended nor failed within 60 s')), 60_000);
      const request = http.request({ hostname, port, path: `/${name}/big.bin`, agent: false });
      request.on('error', reject);
      request.on('response', (response) => {
        let received = 0;
        let last: Buffer = Buffer.alloc(0);
        const done = (ending: string) => {
          clearTimeout(hung);
          resolve({ status: response.statusCode ?? 0, length: response.headers['content-length'], received, ending, tail: last.toString('latin1') });
        };
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          last = chunk;
        });
        response.once('error', (error) => done(`error: ${error.message}`));
        response.once('aborted', () => done('aborted'));
        response.once('end', () => done(response.complete ? 'complete' : 'incomplete'));
        // The client reads a little, then the store goes away while the rest is still to come.
        response.pause();
        void (async () => {
          await relay.cut();
          response.resume();
        })();
      });
      request.end();
    });
    t.equal(cut.status, 200, 'the headers went out before the outage');
    t.equal(cut.length, String(size));
    t.ok(cut.received < size, `the client got part of the file (${cut.received} of ${size} bytes)`);
    t.not(cut.ending, 'complete', `and the response did not end as if whole (${cut.ending})`);
    t.notMatch(cut.tail, /"Code"/, 'no error envelope appended to the bytes');

    await relay.restore();
    const after = await download(baseUrl, `/${name}/big.bin`);
    t.equal(after.status, 200, 'the next download is served');
    t.equal(after.sha256, uploaded.sha256, 'whole');
    t.notOk(service.logs.some((line) => JSON.parse(line).level >= 60), 'nothing fatal logged');
  });

  t.test('the orphan sweep removes objects without a row and abandoned multipart uploads, and keeps the rest', async (t) => {
    const bucket = testBucketName(t);
    const { service } = await s3Service(t, undefined, bucket);
    const owner = await service.newApp();
    const bucketId = await createBucket(service, owner.token, { name: uniqueBucketName('s3') });
    const kept = await storeFile(service, bucketId);
    const orphan = await putBytes(service.app.storage, Buffer.from('no row names me'));
    const client = createS3Client(s3TestConfig(bucket));
    t.teardown(() => client.destroy());
    // What a crash mid-upload leaves: a multipart upload under the store's key layout.
    const abandoned = newStorageKey();
    await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: `${abandoned.slice(0, 2)}/${abandoned}` }));
    t.equal((await incompleteWrites(service.app.storage)).length, 1);

    t.same(await sweepOrphans({ db: service.app.db, storage: service.app.storage }), { incompleteWritesRemoved: 0, objectsRemoved: 0 }, 'nothing under an hour old is judged');
    // The store's times have whole seconds.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    t.same(await sweepOrphans({ db: service.app.db, storage: service.app.storage }, 0), { incompleteWritesRemoved: 1, objectsRemoved: 1 });
    t.same(await storedKeys(service.app.storage), [kept.storageKey], 'the object with a row is kept');
    t.notOk(await hasBytes(service.app.storage, orphan));
    t.same(await incompleteWrites(service.app.storage), []);
  });

  t.test('start-up stops with a message naming S3_BUCKET when the store refuses the credentials', async (t) => {
    const env = s3ServiceEnv(testBucketName(t), { S3_SECRET_ACCESS_KEY: 'a-wrong-secret-key-for-this-test' });
    const error = (await startService(t, { env }).catch((error: unknown) => error)) as Error;
    t.match(error.message, /^S3_BUCKET "test-[0-9a-f]+" .*HTTP 403/);
    t.notMatch(error.message, /a-wrong-secret-key/);
  });
});
