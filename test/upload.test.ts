import { watch } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { createBucket } from './helpers/buckets.js';
import { diskStoreOf, onlyOnDisk } from './helpers/service.js';
import { incompleteWrites } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';
import { fileRow, filesIn, sha256Of, startUploadService, storedPaths } from './helpers/uploaded-files.js';
import { HASHED_IN_PLACE_LENGTH } from '../src/storage/sha256-threads.js';

const MiB = 1024 * 1024;
const INVALID = 'Your input contains several errors!';

async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting until ${what}`);
}

t.test('a multi-megabyte upload streams to disk byte for byte', async (t) => {
  const { service, baseUrl, owner, bucketId, bucketName } = await startUploadService(t);
  const result = await upload({
    baseUrl,
    before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 7 },
    fileName: 'holiday photo.JPG',
    size: 24 * MiB + 7,
  });
  t.equal(result.status, 200);
  t.equal(result.body.Code, 0);
  t.equal(result.body.Message, 'Successfully uploaded your file.');
  t.type(result.body.FileKey, 'number');
  t.equal(result.body.Path, `${baseUrl}/${bucketName}/holiday%20photo.JPG`);

  const row = await fileRow(service, result.body.FileKey as number);
  t.ok(row, 'the row is committed');
  t.equal(row?.size_bytes, 24 * MiB + 7);
  t.equal(row?.real_file_name, 'holiday photo.JPG');
  t.equal(row?.file_extension, '.JPG');
  t.equal(row?.alive_days, 7);
  t.equal(row?.sha256, result.sha256);
  t.equal(await sha256Of(service, row?.storage_key ?? ''), result.sha256, 'the bytes stored are the bytes sent');
  t.same(await incompleteWrites(service.app.storage), [], 'no temp file is left');
});

t.test('fields after a file larger than 1 MiB, and a lower-case file part', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const result = await upload({
    baseUrl,
    after: { accesstoken: owner.token, BUCKETID: bucketId, aliveDays: 3 },
    fieldName: 'file',
    fileName: 'after.bin',
    size: 3 * MiB,
  });
  t.equal(result.body.Code, 0, JSON.stringify(result.body));
  const row = await fileRow(service, result.body.FileKey as number);
  t.equal(row?.size_bytes, 3 * MiB, 'not cut at the 1 MiB default');
  t.equal(row?.sha256, result.sha256);
});

t.test('files sent with a Content-Length, below and above the length hashed in place, keep their bytes and sha256', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  for (const size of [0, 1, 1 * MiB, HASHED_IN_PLACE_LENGTH - 300, HASHED_IN_PLACE_LENGTH + 1, 9 * MiB]) {
    const result = await upload({ baseUrl, query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: `sized-${size}.bin`, size, withLength: true });
    t.equal(result.body.Code, 0, JSON.stringify(result.body));
    const row = await fileRow(service, result.body.FileKey as number);
    t.equal(row?.size_bytes, size, `${size} bytes`);
    t.equal(row?.sha256, result.sha256, `the sha256 of ${size} bytes`);
    t.equal(await sha256Of(service, row?.storage_key ?? ''), result.sha256, `the ${size} bytes stored are the bytes sent`);
  }
});

t.test('parameters in the query string, as the original clients send them', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const result = await upload({
    baseUrl,
    query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 },
    fileName: 'query.txt',
    size: 2 * MiB,
  });
  t.equal(result.body.Code, 0, JSON.stringify(result.body));
  t.equal((await fileRow(service, result.body.FileKey as number))?.sha256, result.sha256);
});

t.test('a file over MAX_UPLOAD_BYTES gets 413 and leaves nothing', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t, { MAX_UPLOAD_BYTES: String(MiB) });
  for (const where of ['after', 'query'] as const) {
    const params = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
    const result = await upload({ baseUrl, [where]: params, fileName: `big-${where}.bin`, size: MiB + 1 });
    t.equal(result.status, 413, where);
    t.same(result.body, { Code: -10, Message: INVALID, Items: [`The file is larger than the limit of ${MiB} bytes.`] });
  }
  const exact = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'exact.bin', size: MiB });
  t.equal(exact.body.Code, 0, 'exactly the limit is accepted');
  t.equal((await filesIn(service, bucketId)).length, 1, 'only the accepted file has a row');
  t.equal((await storedPaths(service)).length, 1, 'only the accepted file has bytes');
});

t.test('a client that aborts mid-upload leaves no row and no temp file', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  await t.rejects(
    upload({
      baseUrl,
      before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 },
      fileName: 'aborted.bin',
      size: 16 * MiB,
      abortAfterBytes: 5 * MiB,
    }),
  );
  await eventually(async () => (await storedPaths(service)).length === 0, 'the temp file is removed');
  t.same(await filesIn(service, bucketId), []);
  const after = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'aborted.bin', size: 1000 });
  t.equal(after.body.Code, 0, 'the service keeps working and the name is free');
});

t.test('a refused upload whose token and bucket come first writes no bytes', { skip: onlyOnDisk('watches the storage folders for any file created, even briefly') }, async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const stranger = await service.newApp();
  const created: string[] = [];
  const watcher = watch(service.config.storageDir, { recursive: false }, (_event, name) => created.push(String(name)));
  const tmpWatcher = watch(diskStoreOf(service).tmpDir, (_event, name) => created.push(String(name)));
  t.teardown(() => {
    watcher.close();
    tmpWatcher.close();
  });

  const cases = [
    [{ AccessToken: 'not-a-token', BucketId: bucketId, AliveDays: 1 }, 'Invalid or expired AccessToken.'],
    [{ AccessToken: stranger.token, BucketId: bucketId, AliveDays: 1 }, 'You may not upload into this bucket.'],
    [{ AccessToken: owner.token, BucketId: 987654321, AliveDays: 1 }, 'Could not find that bucket.'],
  ] as const;
  for (const [params, message] of cases) {
    const viaQuery = await upload({ baseUrl, query: params, fileName: 'refused.bin', size: 4 * MiB });
    t.same(viaQuery.body, { Code: -1, Message: message });
    const viaFields = await upload({ baseUrl, before: params, fileName: 'refused.bin', size: 4 * MiB });
    t.same(viaFields.body, { Code: -1, Message: message });
    // AliveDays does not decide a refusal: token and bucket before the file are enough.
    const { AliveDays, ...authorizing } = params;
    const daysAfter = await upload({ baseUrl, before: authorizing, after: { AliveDays }, fileName: 'refused.bin', size: 4 * MiB });
    t.same(daysAfter.body, { Code: -1, Message: message });
  }
  await sleep(100);
  t.same(created, [], 'nothing was created under the storage folder');
  t.same(await filesIn(service, bucketId), []);
});

t.test('an upload refused only after the file arrived leaves nothing behind', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const result = await upload({ baseUrl, after: { AccessToken: 'forged', BucketId: bucketId, AliveDays: 1 }, size: 2 * MiB });
  t.same(result.body, { Code: -1, Message: 'Invalid or expired AccessToken.' });
  const invalid = await upload({ baseUrl, after: { AccessToken: owner.token, BucketId: 'abc', AliveDays: 0 }, size: 2 * MiB });
  t.same(invalid.body, {
    Code: -10,
    Message: INVALID,
    Items: ["The value 'abc' is not valid for BucketId.", 'The field AliveDays must be between 1 and 18250.'],
  });
  t.same(await storedPaths(service), []);
  t.same(await filesIn(service, bucketId), []);
});

t.test('OpenToUpload lets any app upload; otherwise only the owner', async (t) => {
  const { service, baseUrl, bucketId: closedId } = await startUploadService(t);
  const owner = await service.newApp();
  const other = await service.newApp();
  const openId = await createBucket(service, owner.token, { openToUpload: true });
  const open = await upload({ baseUrl, before: { AccessToken: other.token, BucketId: openId, AliveDays: 1 }, size: 10 });
  t.equal(open.body.Code, 0, 'another app uploads into an open bucket');
  const closed = await upload({ baseUrl, before: { AccessToken: other.token, BucketId: closedId, AliveDays: 1 }, size: 10 });
  t.same(closed.body, { Code: -1, Message: 'You may not upload into this bucket.' });
});


t.test('50 concurrent uploads into one bucket', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      upload({ baseUrl, query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: `part-${i}.bin`, size: 64 * 1024 + i }),
    ),
  );
  t.same(results.map((r) => r.body.Code), Array(50).fill(0));
  t.equal(new Set(results.map((r) => r.body.FileKey)).size, 50, '50 distinct FileKeys');
  const detail = await service.app.inject({ url: `/API/ViewBucketDetail?BucketId=${bucketId}` });
  t.equal(detail.json().FileCount, 50);
  const rows = await filesIn(service, bucketId);
  for (const result of results) {
    const row = rows.find((r) => r.file_key === result.body.FileKey);
    t.equal(row?.sha256, result.sha256);
  }
});

t.test('exactly one file part', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const params = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
  const none = await upload({ baseUrl, before: params, fileParts: 0, size: 0 });
  t.same(none.body, { Code: -10, Message: INVALID, Items: ['The File field is required: send exactly one file part.'] });
  const two = await upload({ baseUrl, before: params, fileParts: 2, size: 300 * 1024 });
  t.same(two.body, { Code: -10, Message: INVALID, Items: ['Exactly one file part is allowed.'] });
  t.same(await storedPaths(service), []);
  t.same(await filesIn(service, bucketId), []);
});

t.test('requests that are not a multipart upload', async (t) => {
  const { service } = await startUploadService(t);
  const form = await service.app.inject({
    method: 'POST',
    url: '/API/UploadFile',
    payload: 'AccessToken=x&BucketId=1&AliveDays=1',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.same(form.json(), { Code: -10, Message: INVALID, Items: ['The request must be multipart/form-data with one file part.'] });
  const noBoundary = await service.app.inject({ method: 'POST', url: '/API/UploadFile', payload: 'x', headers: { 'content-type': 'multipart/form-data' } });
  t.equal(noBoundary.json().Code, -10);
  t.not(noBoundary.statusCode, 500);
  const truncated = await service.app.inject({
    method: 'POST',
    url: '/API/UploadFile',
    payload: '--b\r\nContent-Disposition: form-data; name="File"; filename="a.txt"\r\n\r\nabc',
    headers: { 'content-type': 'multipart/form-data; boundary=b' },
  });
  t.same(truncated.json(), { Code: -10, Message: INVALID, Items: ['The multipart body could not be read.'] });
  t.same(await storedPaths(service), []);
});

t.test('uploads are refused before the body when free space is below the floor', { skip: onlyOnDisk('MIN_FREE_DISK_BYTES is a floor of the disk store') }, async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t, { MIN_FREE_DISK_BYTES: String(Number.MAX_SAFE_INTEGER) });
  const result = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, size: MiB });
  t.equal(result.status, 507);
  t.same(result.body, { Code: -1, Message: 'The storage is full; the file was not stored.' });
  t.same(await storedPaths(service), []);
});

t.test('AccessToken or BucketId in the query and a different value as a form field is refused, nothing stored', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const otherBucket = await createBucket(service, owner.token);
  const twice = (name: string) => `The ${name} is given twice with different values.`;
  const query = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
  const cases: Array<[string, Parameters<typeof upload>[0], string[]]> = [
    ['a token before the file', { baseUrl, query, before: { AccessToken: 'another-token' }, size: 2 * MiB }, [twice('AccessToken')]],
    ['a token after the file', { baseUrl, query, after: { accesstoken: 'another-token' }, size: 2 * MiB }, [twice('AccessToken')]],
    ['a bucket before the file', { baseUrl, query, before: { BucketId: otherBucket }, size: 2 * MiB }, [twice('BucketId')]],
    ['a bucket after the file, with a bad AliveDays', { baseUrl, query: { AccessToken: owner.token, BucketId: bucketId }, after: { bucketid: otherBucket, AliveDays: 0 }, size: 2 * MiB }, [twice('BucketId'), 'The field AliveDays must be between 1 and 18250.']],
  ];
  for (const [name, spec, items] of cases) {
    const result = await upload(spec);
    t.same(result.body, { Code: -10, Message: INVALID, Items: items }, name);
  }
  const same = await upload({ baseUrl, query, before: { AccessToken: owner.token, BucketId: bucketId }, fileName: 'agreeing.bin', size: 1000 });
  t.equal(same.body.Code, 0, 'the same values in both places are fine');
  t.equal((await filesIn(service, bucketId)).length, 1, 'only the agreeing upload has a row');
  t.same(await filesIn(service, otherBucket), []);
  t.equal((await storedPaths(service)).length, 1, 'only the agreeing upload has bytes');
});

t.test('an invalid value before the file is refused without storing the file, with every problem of the form', { skip: onlyOnDisk('watches the storage folders for any file created, even briefly') }, async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const created: string[] = [];
  const tmpWatcher = watch(diskStoreOf(service).tmpDir, (_event, name) => created.push(String(name)));
  t.teardown(() => tmpWatcher.close());
  const result = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: 'abc' }, after: { AliveDays: 'x' }, size: 4 * MiB });
  t.same(result.body, { Code: -10, Message: INVALID, Items: ["The value 'abc' is not valid for BucketId.", "The value 'x' is not valid for AliveDays."] });
  const conflicting = await upload({ baseUrl, query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, before: { AccessToken: 'another-token' }, size: 4 * MiB });
  t.equal(conflicting.body.Code, -10);
  await sleep(100);
  t.same(created, [], 'no temp file was created');
});
