import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import t from 'tap';
import { FileStore, FileStoreError, type UploadProgress } from '../packages/client/src/node.js';
import { uniqueBucketName } from './helpers/buckets.js';
import { startService } from './helpers/service.js';

/** Every method of the SDK against the service, through its real socket. */

const MiB = 1024 * 1024;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const VALIDATION = 'Your input contains several errors!';

/** The error a promise rejects with, to assert on its fields. */
async function failure(promise: Promise<unknown>): Promise<FileStoreError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof FileStoreError) return error;
    throw error;
  }
  throw new Error('expected a FileStoreError');
}
const fields = (error: FileStoreError) => ({ code: error.code, message: error.message, items: error.items, status: error.status });

t.test('the SDK', async (t) => {
  const service = await startService(t);
  const url = await service.listen();
  const owner = await service.newApp();
  const requests: string[] = [];
  const counting: typeof fetch = (input, init) => {
    requests.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
    return fetch(input, init);
  };
  const client = new FileStore({ url, appId: owner.appId, appSecret: owner.appSecret, fetch: counting });
  const metric = async (name: string) => {
    const text = await (await fetch(`${url}/metrics`)).text();
    return Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  };

  let bucketId = 0;
  const bucketName = uniqueBucketName('sdk');

  await t.test('buckets: create, view, edit, list, and refusals with their Code and Items', async (t) => {
    const created = await client.createBucket(bucketName, { openToRead: true });
    t.match(created, { Code: 0, Message: 'Successfully created your bucket!', BucketId: Number });
    bucketId = created.BucketId;
    t.same(await client.viewBucketDetail(bucketId), {
      BucketId: bucketId,
      BucketName: bucketName,
      OpenToRead: true,
      OpenToUpload: false,
      BelongingAppId: owner.appId,
      FileCount: 0,
      Message: 'Successfully get your bucket detail!',
      Code: 0,
    });
    const listed = await client.viewMyBuckets();
    t.equal(listed.AppId, owner.appId);
    t.same(listed.Buckets.map((bucket) => bucket.BucketName), [bucketName]);

    const taken = await failure(client.createBucket(bucketName));
    t.same(fields(taken), { code: -1, message: 'There is one bucket already called that name!', items: [], status: 200 });
    const invalid = await failure(client.createBucket('abc'));
    t.same(fields(invalid), { code: -10, message: VALIDATION, items: ['The field BucketName must be 5 to 25 characters long.'], status: 200 }, 'the service’s Items');

    const sent = requests.length;
    const local = await failure(client.editBucket(1.5, { newBucketName: '', openToRead: 'yes' as unknown as boolean, openToUpload: false }));
    t.same(
      fields(local),
      { code: -10, message: VALIDATION, items: ["The value '1.5' is not valid for BucketId.", 'The NewBucketName field is required.', "The value 'yes' is not valid for OpenToRead."], status: 0 },
      'bad arguments are refused by the SDK, in the service’s words',
    );
    t.equal(requests.length, sent, 'and nothing is sent');

    const renamed = uniqueBucketName('sdk-renamed');
    t.same(await client.editBucket(bucketId, { newBucketName: renamed, openToRead: true, openToUpload: true }), { Message: 'Successfully edited your bucket!', Code: 0 });
    t.match(await client.viewBucketDetail(bucketId), { BucketName: renamed, OpenToUpload: true });
    const other = await service.newApp();
    const stranger = new FileStore({ url, accessToken: other.token });
    t.same(fields(await failure(stranger.deleteBucket(bucketId))), { code: -1, message: 'This is not your bucket!', items: [], status: 200 });
  });

  const folder = await mkdtemp(path.join(tmpdir(), 'filestore-sdk-'));
  t.teardown(() => rm(folder, { recursive: true, force: true }));

  await t.test('uploads from bytes, a Blob, a stream and a path, with progress; the bytes come back', async (t) => {
    const onDisk = path.join(folder, 'on disk.bin');
    const diskBytes = randomBytes(3 * MiB + 17);
    await writeFile(onDisk, diskBytes);
    const cases: Array<[string, Parameters<typeof client.uploadFile>[1], Uint8Array, Record<string, unknown>]> = [
      ['bytes.bin', randomBytes(1000), new Uint8Array(), {}],
      ['blob.txt', new Blob(['hello from a Blob\n']), new Uint8Array(), {}],
      ['stream.bin', undefined as never, randomBytes(2 * MiB), {}],
      ['on disk.bin', { path: onDisk }, diskBytes, {}],
    ];
    cases[0]![2] = cases[0]![1] as Uint8Array;
    cases[1]![2] = new TextEncoder().encode('hello from a Blob\n');
    cases[2]![1] = Readable.from([cases[2]![2].subarray(0, MiB), cases[2]![2].subarray(MiB)]);
    for (const [name, source, bytes] of cases) {
      const progress: UploadProgress[] = [];
      const uploaded = await client.uploadFile(bucketId, source, { aliveDays: 3, fileName: name === 'on disk.bin' ? undefined : name, onProgress: (p) => progress.push(p) });
      t.match(uploaded, { Code: 0, Message: 'Successfully uploaded your file.', FileKey: Number }, name);
      t.match(uploaded.Path, new RegExp(`/${encodeURIComponent(name)}$`), `${name}: its InternetPath`);
      const back = await (await client.downloadFromKey(uploaded.FileKey)).bytes();
      t.equal(sha256(back), sha256(bytes), `${name}: the bytes back are the bytes sent`);
      t.ok(progress.length >= 2, `${name}: progress is reported`);
      t.same(progress.at(-1)?.sent, bytes.byteLength, `${name}: up to the whole`);
      t.ok(progress.every((p, i) => i === 0 || p.sent >= progress[i - 1]!.sent || p.sent === 0), `${name}: and moves forward`);
    }
    const refused = await failure(client.uploadFile(bucketId, new Uint8Array([1]), { aliveDays: 3, fileName: 'bytes.bin' }));
    t.same(fields(refused), { code: -1, message: 'There already exists a file with that name.', items: [], status: 200 });
    const local = await failure(client.uploadFile(bucketId, new Uint8Array([1]), { aliveDays: 0 }));
    t.same(local.items, ['The field AliveDays must be between 1 and 18250.'], 'days checked before the file is read');
    t.equal(local.status, 0);
  });

  await t.test('files: one, several, all at once, and all as they stream', async (t) => {
    // Enough files that the listing comes in several pages.
    for (let i = 0; i < 40; i++) await client.uploadFile(bucketId, new TextEncoder().encode(`note ${i}`), { aliveDays: 1, fileName: `note-${String(i).padStart(2, '0')}.txt` });
    const all = await client.viewAllFiles(bucketId);
    t.equal(all.BucketId, bucketId);
    t.equal(all.AllFiles.length, 44);
    const streamed = [];
    for await (const file of client.files(bucketId)) streamed.push(file);
    t.same(streamed, all.AllFiles, 'files() yields what ViewAllFiles answers, in FileKey order');

    const [first, second] = all.AllFiles;
    t.same((await client.viewOneFile(first!.FileKey)).File, first);
    t.same((await client.viewMultiFiles([second!.FileKey, first!.FileKey, 999_999_999])).Items, [second, first], 'in the order asked, unknown ones left out');
    t.same(fields(await failure(client.viewOneFile(999_999_999))), { code: -1, message: 'Could not find that file.', items: [], status: 200 });
    t.same((await failure(client.viewMultiFiles([1, -2]))).items, ["The value '-2' is not valid for Ids."]);

    const refused = await failure((async () => {
      for await (const file of new FileStore({ url, accessToken: 'not-a-token' }).files(bucketId)) void file;
    })());
    t.same(fields(refused), { code: -1, message: 'Invalid or expired AccessToken.', items: [], status: 200 }, 'a refused listing throws its envelope');

    t.same(await client.deleteFile(second!.FileKey), { Message: 'Successfully deleted your file!', Code: 0 });
    t.equal((await failure(client.downloadFromKey(second!.FileKey))).status, 404, 'a deleted file is not served');
  });

  await t.test('downloads: ranges, validators, HEAD, the InternetPath, and secrets', async (t) => {
    const bytes = randomBytes(100_000);
    const { FileKey } = await client.uploadFile(bucketId, bytes, { aliveDays: 1, fileName: 'ranged file.bin' });
    const whole = await client.downloadFromKey(FileKey);
    t.match(whole, { status: 200, size: bytes.length, totalSize: bytes.length, fileName: 'ranged file.bin', etag: /^"[0-9a-f]{64}"$/ });
    t.equal(sha256(await whole.bytes()), sha256(bytes));

    const part = await client.downloadFromKey(FileKey, { range: { start: 10, end: 19 } });
    t.match(part, { status: 206, size: 10, totalSize: bytes.length, range: { start: 10, end: 19 } });
    t.same(Buffer.from(await part.bytes()), bytes.subarray(10, 20));
    const tail = await client.downloadFromKey(FileKey, { range: { suffix: 5 } });
    t.same(Buffer.from(await tail.bytes()), bytes.subarray(-5));
    const rest = await client.downloadFromKey(FileKey, { range: { start: 99_990 }, ifRange: whole.etag });
    t.same(Buffer.from(await rest.bytes()), bytes.subarray(99_990), 'from an offset to the end, while the ETag holds');

    const unchanged = await client.downloadFromKey(FileKey, { ifNoneMatch: whole.etag });
    t.match(unchanged, { status: 304, body: null });
    const outside = await failure(client.downloadFromKey(FileKey, { range: { start: 200_000 } }));
    t.same(fields(outside), { code: -1, message: 'The requested range is not within the file.', items: [], status: 416 });
    const head = await client.downloadFromKey(FileKey, { headOnly: true });
    t.match(head, { status: 200, size: bytes.length, body: null });

    const detail = await client.viewBucketDetail(bucketId);
    const byPath = await client.downloadFromPath(detail.BucketName, 'ranged file.bin', { attachment: true, name: 'other.bin' });
    t.equal(byPath.fileName, 'other.bin');
    t.equal(sha256(await byPath.bytes()), sha256(bytes));
    const file = (await client.viewOneFile(FileKey)).File;
    t.equal(sha256(await (await client.download(file.InternetPath)).bytes()), sha256(bytes), 'download() takes an InternetPath');

    const secret = await client.generateSecret(FileKey, { maxUseTimes: 2 });
    t.match(secret, { Code: 0, Message: 'Successfully generated a download secret.', Value: String });
    t.equal(client.secretUrl(secret.Value), `${url}/Download/FromSecret?sec=${encodeURIComponent(secret.Value)}`);
    for (let use = 1; use <= 2; use++) t.equal(sha256(await (await client.downloadFromSecret(secret.Value)).bytes()), sha256(bytes), `use ${use}`);
    t.same(fields(await failure(client.downloadFromSecret(secret.Value))), { code: -1, message: 'Could not find that file.', items: [], status: 404 }, 'then it is used up');
    t.same((await failure(client.generateSecret(FileKey, { maxUseTimes: 0 }))).items, ['The field MaxUseTimes must be between 1 and 1000000.']);
  });

  await t.test('a resumable upload aborted halfway resumes from the service’s offset', async (t) => {
    const chunked = new FileStore({ url, appId: owner.appId, appSecret: owner.appSecret, chunkSize: 4 * MiB, resumableThreshold: MiB });
    const bytes = randomBytes(20 * MiB + 3);
    const createdBefore = await metric('filestore_resumable_uploads_total{event="created"}');
    const controller = new AbortController();
    let uploadUrl: string | undefined;
    const aborted = await chunked
      .uploadFile(bucketId, bytes, {
        aliveDays: 1,
        fileName: 'resumed.bin',
        signal: controller.signal,
        onUploadUrl: (at) => (uploadUrl = at),
        onProgress: ({ sent }) => {
          if (sent >= 6 * MiB) controller.abort();
        },
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    t.equal((aborted as Error)?.name, 'AbortError', 'the signal aborts the upload');
    t.match(uploadUrl, /\/API\/ResumableUpload\/[0-9a-f]{32}$/);
    const held = await chunked.resumableOffset(uploadUrl!);
    t.ok(held && held.offset >= 4 * MiB && held.offset < bytes.length, `the service holds part of it (${held?.offset})`);
    t.equal(held?.length, bytes.length);

    const progress: number[] = [];
    const done = await chunked.uploadFile(bucketId, bytes, { aliveDays: 1, fileName: 'resumed.bin', resumeFrom: uploadUrl, onProgress: ({ sent }) => progress.push(sent) });
    t.equal(progress[0], held!.offset, 'the second run starts where the service is');
    t.equal(sha256(await (await chunked.downloadFromKey(done.FileKey)).bytes()), sha256(bytes), 'and the file is whole');
    t.equal((await chunked.viewOneFile(done.FileKey)).File.JFileSize, bytes.length);
    t.equal((await metric('filestore_resumable_uploads_total{event="created"}')) - createdBefore, 1, 'one upload was created, not two');
  });

  await t.test('a connection broken midway is picked up where the service is, on its own', async (t) => {
    const chunked = new FileStore({ url, appId: owner.appId, appSecret: owner.appSecret, chunkSize: 4 * MiB, resumableThreshold: MiB });
    const bytes = randomBytes(16 * MiB);
    const source = path.join(folder, 'cut.bin');
    await writeFile(source, bytes);
    let cut = false;
    const done = await chunked.uploadFile(bucketId, { path: source }, {
      aliveDays: 1,
      onProgress: ({ sent }) => {
        if (!cut && sent >= 6 * MiB) {
          cut = true;
          service.app.server.closeAllConnections();
        }
      },
    });
    t.ok(cut, 'the connection was cut');
    t.equal(sha256(await (await chunked.downloadFromKey(done.FileKey)).bytes()), sha256(bytes), 'the file is whole');

    const gone = await chunked.uploadFile(bucketId, randomBytes(2 * MiB), { aliveDays: 1, fileName: 'cut.bin', resumable: true }).catch((error: unknown) => error);
    t.same(fields(gone as FileStoreError), { code: -1, message: 'There already exists a file with that name.', items: [], status: 409 }, 'a refused creation carries its envelope and status');
  });

  await t.test('terminating an upload, deleting a bucket and the app', async (t) => {
    const chunked = new FileStore({ url, appId: owner.appId, appSecret: owner.appSecret, chunkSize: MiB });
    const controller = new AbortController();
    let uploadUrl = '';
    await chunked
      .uploadFile(bucketId, randomBytes(3 * MiB), { aliveDays: 1, fileName: 'given-up.bin', resumable: true, signal: controller.signal, onUploadUrl: (at) => (uploadUrl = at), onProgress: ({ sent }) => sent >= MiB && controller.abort() })
      .catch(() => {});
    t.ok(await chunked.resumableOffset(uploadUrl));
    await chunked.terminateUpload(uploadUrl);
    t.equal(await chunked.resumableOffset(uploadUrl), undefined, 'a terminated upload is gone');

    t.same(await client.deleteBucket(bucketId), { Message: 'Successfully deleted your bucket!', Code: 0 });
    t.same(fields(await failure(client.viewBucketDetail(bucketId))), { code: -1, message: 'Could not find that bucket.', items: [], status: 200 });
    const doomed = await service.newApp();
    const theirs = new FileStore({ url, appId: doomed.appId, appSecret: doomed.appSecret });
    t.same(fields(await failure(theirs.deleteApp(owner.appId))), { code: -1, message: 'You can only delete your own app.', items: [], status: 200 });
    t.same(await theirs.deleteApp(doomed.appId), { Message: 'Successfully deleted that app and all files.', Code: 0 });
    t.same(fields(await failure(theirs.viewMyBuckets())), { code: -1, message: 'The AppId and AppSecret do not match any app.', items: [], status: 200 }, 'its credentials die with it');
  });
});
