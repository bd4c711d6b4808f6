import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { createBucket } from './helpers/buckets.js';
import { createResumable, OCTETS, setupResumable, type ResumableSetup } from './helpers/resumable.js';
import { startService, type TestService } from './helpers/service.js';
import { metadata, patchThenDrop, tusRequest } from './helpers/tus.js';

const MiB = 1024 * 1024;
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** Files left under STORAGE_DIR/resumable: the bytes of incomplete uploads. */
async function resumableFiles(service: TestService): Promise<string[]> {
  return readdir(path.join(service.config.storageDir, 'resumable'));
}

/** Two services on one database and one storage folder: `a` set up as by setupResumable(), `b` at bBase. */
async function twoInstances(t: Test): Promise<{ a: ResumableSetup; bBase: string }> {
  const storageDir = await mkdtemp(path.join(tmpdir(), 'filestore-resumable-shared-'));
  t.teardown(() => rm(storageDir, { recursive: true, force: true }));
  const a = await setupResumable(t, { STORAGE_DIR: storageDir });
  const b = await startService(t, { env: { STORAGE_DIR: storageDir } });
  return { a, bBase: await b.listen() };
}

async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`download ${url}: ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

t.test('OPTIONS announces the protocol, its extensions and the size limit', async (t) => {
  const s = await setupResumable(t, { MAX_UPLOAD_BYTES: String(64 * MiB) });
  const response = await tusRequest(s.endpoint, 'OPTIONS', {});
  t.equal(response.status, 204);
  t.equal(response.headers['tus-version'], '1.0.0');
  t.equal(response.headers['tus-extension'], 'creation,creation-with-upload,termination,expiration');
  t.equal(response.headers['tus-max-size'], String(64 * MiB));
});

t.test('a connection dropped mid-PATCH resumes from the offset HEAD reports, and the file is byte-identical', async (t) => {
  const s = await setupResumable(t);
  const content = randomBytes(6 * MiB + 123);
  const created = await createResumable(s, content.length, 'résumé video.bin');
  t.equal(created.status, 201, created.body);
  const location = created.headers.location!;
  t.match(location, new RegExp(`^${s.base}/API/ResumableUpload/[a-f0-9]{32}$`), 'absolute Location with a 128-bit id');
  t.ok(created.headers['upload-expires'], 'Upload-Expires on creation');

  const first = await tusRequest(location, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, content.subarray(0, 1 * MiB));
  t.equal(first.status, 204, first.body);
  t.equal(first.headers['upload-offset'], String(MiB));
  t.ok(first.headers['upload-expires']);

  await patchThenDrop(location, MiB, content.subarray(MiB), 2 * MiB);
  // The server notices the dropped connection and records what arrived.
  let offset = 0;
  for (let i = 0; i < 50; i++) {
    const head = await tusRequest(location, 'HEAD', {});
    t.equal(head.status, 200);
    offset = Number(head.headers['upload-offset']);
    if (offset > MiB) break;
    await sleep(100);
  }
  t.ok(offset > MiB && offset <= 3 * MiB, `HEAD reports the bytes that arrived before the drop (${offset})`);

  const head = await tusRequest(location, 'HEAD', {});
  t.equal(head.headers['upload-length'], String(content.length));
  t.equal(head.headers['cache-control'], 'no-store');
  t.ok(Date.parse(head.headers['upload-expires'] as string) > Date.now(), 'Upload-Expires on HEAD');
  t.notMatch(head.headers['upload-metadata'] ?? '', /accesstoken/i, 'the token is not echoed');

  const uploadFile = path.join(s.service.config.storageDir, 'resumable', location.split('/').pop()!);
  const { ino } = await stat(uploadFile);
  const last = await tusRequest(location, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': offset }, content.subarray(offset));
  t.equal(last.status, 204, last.body);
  t.equal(last.headers['upload-offset'], String(content.length));
  const fileKey = Number(last.headers['upload-file-key']);
  t.ok(fileKey > 0, 'Upload-File-Key');
  const row = await s.service.app.db.selectFrom('files').select('storage_key').where('file_key', '=', fileKey).executeTakeFirstOrThrow();
  const stored = await stat(path.join(s.service.config.storageDir, 'objects', row.storage_key.slice(0, 2), row.storage_key));
  t.equal(stored.ino, ino, 'the upload’s file became the stored object: moved, not written again');
  t.same(await readdir(path.join(s.service.config.storageDir, 'tmp')), [], 'nothing left in the temp folder');
  const filePath = last.headers['upload-file-path'] as string;
  t.equal(filePath, `${s.base}/${encodeURIComponent((await s.service.app.inject(`/API/ViewBucketDetail?BucketId=${s.bucketId}`)).json().BucketName)}/r%C3%A9sum%C3%A9%20video.bin`);

  t.equal(sha256(await download(`${s.base}/Download/FromKey/${fileKey}`)), sha256(content), 'byte-identical through /Download/FromKey');
  const etag = (await fetch(`${s.base}/Download/FromKey/${fileKey}`, { method: 'HEAD' })).headers.get('etag');
  t.equal(etag, `"${sha256(content)}"`, 'the stored sha256 is that of the bytes');
  t.equal(sha256(await download(filePath)), sha256(content), 'byte-identical through the InternetPath');
  const listed = (await s.service.app.inject(`/API/ViewAllFiles?AccessToken=${s.token}&BucketId=${s.bucketId}`)).json();
  t.same(
    listed.AllFiles.map((f: { FileKey: number; RealFileName: string; JFileSize: number }) => [f.FileKey, f.RealFileName, f.JFileSize]),
    [[fileKey, 'résumé video.bin', content.length]],
    'listed by ViewAllFiles',
  );
  t.same(await resumableFiles(s.service), [], 'the upload’s own bytes are gone');
  t.equal((await tusRequest(location, 'HEAD', {})).status, 404, 'a completed upload is no longer an upload');
  const logs = s.service.logs.join('\n');
  t.match(logs, /\/API\/ResumableUpload\/\[REDACTED\]/, 'upload URLs are logged…');
  t.notOk(logs.includes(location.split('/').pop()!), '…without their id, the upload’s capability');
  t.notOk(logs.includes(s.token), 'nor the token');

  const metrics = await (await fetch(`${s.base}/metrics`)).text();
  t.match(metrics, /filestore_resumable_uploads_total\{event="created"\} 1\n/);
  t.match(metrics, /filestore_resumable_uploads_total\{event="completed"\} 1\n/);
  t.match(metrics, new RegExp(`filestore_resumable_received_bytes_total ${content.length}\n`), 'every byte counted once');
});

t.test('creation-with-upload and an empty file complete in the POST itself', async (t) => {
  const s = await setupResumable(t);
  const content = randomBytes(300_000);
  const whole = await tusRequest(
    s.endpoint,
    'POST',
    {
      Authorization: `Bearer ${s.token}`,
      'Upload-Length': content.length,
      'Upload-Metadata': metadata({ filename: 'one-shot.bin', bucketid: String(s.bucketId), alivedays: '1' }),
      'Content-Type': OCTETS,
    },
    content,
  );
  t.equal(whole.status, 201, whole.body);
  t.equal(whole.headers['upload-offset'], String(content.length));
  t.equal(sha256(await download(`${s.base}/Download/FromKey/${whole.headers['upload-file-key']}`)), sha256(content));

  const empty = await createResumable(s, 0, 'empty.txt');
  t.equal(empty.status, 201, empty.body);
  const key = empty.headers['upload-file-key'];
  t.ok(key, 'Upload-Length: 0 completes at once');
  t.equal((await download(`${s.base}/Download/FromKey/${key}`)).length, 0);
  t.same(await resumableFiles(s.service), []);
});

t.test('the token may come from the AccessToken metadata key; given twice differently it is refused', async (t) => {
  const s = await setupResumable(t);
  const viaMetadata = await tusRequest(s.endpoint, 'POST', {
    'Upload-Length': 10,
    'Upload-Metadata': metadata({ filename: 'a.txt', BucketId: String(s.bucketId), AliveDays: '3', AccessToken: s.token }),
  });
  t.equal(viaMetadata.status, 201, viaMetadata.body);
  const twice = await createResumable(s, 10, 'b.txt', { AccessToken: 'something-else' });
  t.equal(twice.status, 400);
  t.same(JSON.parse(twice.body).Items, ['The AccessToken is given twice with different values.']);
});

t.test('every refusal of creation carries the envelope, and stores nothing', async (t) => {
  const s = await setupResumable(t, { MAX_UPLOAD_BYTES: String(MiB) });
  const other = await s.service.newApp();
  const closed = await createBucket(s.service, other.token, { openToUpload: false });
  const taken = await createResumable(s, 0, 'taken.txt');
  t.equal(taken.status, 201);

  const cases: Array<[string, Record<string, string | number>, number, Record<string, unknown>]> = [
    ['no token', { 'Upload-Length': 5, 'Upload-Metadata': metadata({ filename: 'x', BucketId: String(s.bucketId), AliveDays: '1' }) }, 400, { Code: -10, Items: ['The AccessToken field is required.'] }],
    [
      'every invalid input at once',
      { Authorization: `Bearer ${s.token}`, 'Upload-Length': 5, 'Upload-Metadata': metadata({ BucketId: 'abc', AliveDays: '0' }) },
      400,
      { Code: -10, Items: ["The value 'abc' is not valid for BucketId.", 'The field AliveDays must be between 1 and 18250.', 'The filename field of Upload-Metadata is required.'] },
    ],
    ['deferred length', { Authorization: `Bearer ${s.token}`, 'Upload-Defer-Length': 1, 'Upload-Metadata': metadata({ filename: 'x', BucketId: String(s.bucketId), AliveDays: '1' }) }, 400, { Code: -10, Items: ['Upload-Defer-Length is not supported: send Upload-Length.'] }],
    ['metadata not base64', { Authorization: `Bearer ${s.token}`, 'Upload-Length': 5, 'Upload-Metadata': 'filename not-base64!' }, 400, { Code: -10 }],
    ['bad token', { Authorization: 'Bearer nope', 'Upload-Length': 5, 'Upload-Metadata': metadata({ filename: 'x', BucketId: String(s.bucketId), AliveDays: '1' }) }, 403, { Code: -1, Message: 'Invalid or expired AccessToken.' }],
    ['another app’s closed bucket', { Authorization: `Bearer ${s.token}`, 'Upload-Length': 5, 'Upload-Metadata': metadata({ filename: 'x', BucketId: String(closed), AliveDays: '1' }) }, 403, { Code: -1, Message: 'You may not upload into this bucket.' }],
    ['unknown bucket', { Authorization: `Bearer ${s.token}`, 'Upload-Length': 5, 'Upload-Metadata': metadata({ filename: 'x', BucketId: '999999999', AliveDays: '1' }) }, 403, { Code: -1, Message: 'Could not find that bucket.' }],
    ['too large', { Authorization: `Bearer ${s.token}`, 'Upload-Length': MiB + 1, 'Upload-Metadata': metadata({ filename: 'x', BucketId: String(s.bucketId), AliveDays: '1' }) }, 413, { Code: -10, Items: [`The file is larger than the limit of ${MiB} bytes.`] }],
    ['name taken', { Authorization: `Bearer ${s.token}`, 'Upload-Length': 5, 'Upload-Metadata': metadata({ filename: 'taken.txt', BucketId: String(s.bucketId), AliveDays: '1' }) }, 409, { Code: -1, Message: 'There already exists a file with that name.' }],
  ];
  for (const [name, headers, status, expected] of cases) {
    const response = await tusRequest(s.endpoint, 'POST', headers);
    t.equal(response.status, status, `${name}: status`);
    t.match(response.headers['content-type'], /application\/json/, `${name}: JSON`);
    t.match(JSON.parse(response.body), expected, `${name}: envelope`);
  }

  const noTus = await fetch(s.endpoint, { method: 'POST', headers: { Authorization: `Bearer ${s.token}`, 'Upload-Length': '5' } });
  t.equal(noTus.status, 412, 'Tus-Resumable missing');
  t.match(await noTus.json(), { Code: -1 });
  t.same(await resumableFiles(s.service), [], 'no refused creation left bytes');
});

t.test('PATCH refusals: content type 415, offset 409, unknown 404, over the length 413', async (t) => {
  const s = await setupResumable(t);
  const created = await createResumable(s, 10, 'p.txt');
  const location = created.headers.location!;
  const wrongType = await tusRequest(location, 'PATCH', { 'Content-Type': 'application/octet-stream', 'Upload-Offset': 0 }, Buffer.from('hello'));
  t.equal(wrongType.status, 415);
  t.match(JSON.parse(wrongType.body), { Code: -10 });
  const wrongOffset = await tusRequest(location, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 3 }, Buffer.from('hello'));
  t.equal(wrongOffset.status, 409);
  t.match(JSON.parse(wrongOffset.body), { Code: -1 });
  const tooMuch = await tusRequest(location, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, Buffer.from('hello world!'));
  t.equal(tooMuch.status, 413);
  const unknown = await tusRequest(`${s.endpoint}/${'0'.repeat(32)}`, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, Buffer.from('x'));
  t.equal(unknown.status, 404);
  t.match(JSON.parse(unknown.body), { Code: -1, Message: 'Could not find that upload.' });
  t.equal((await tusRequest(`${s.endpoint}/not-an-id`, 'HEAD', {})).status, 404);
  t.equal((await tusRequest(location, 'HEAD', {})).headers['upload-offset'], '0', 'no refused PATCH moved the offset');
});

t.test('a name taken while the upload ran: the last PATCH gets 409 and the bytes are removed', async (t) => {
  const s = await setupResumable(t);
  const slow = await createResumable(s, 3, 'race.txt');
  t.equal(slow.status, 201, 'an incomplete upload does not hold the name…');
  const fast = await createResumable(s, 0, 'race.txt');
  t.equal(fast.status, 201, '…so another upload takes it first');
  t.ok(fast.headers['upload-file-key']);
  t.equal((await resumableFiles(s.service)).length, 1);

  const last = await tusRequest(slow.headers.location!, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, Buffer.from('abc'));
  t.equal(last.status, 409, last.body);
  t.match(JSON.parse(last.body), { Code: -1, Message: 'There already exists a file with that name.' });
  t.same(await resumableFiles(s.service), [], 'the refused upload’s bytes are removed…');
  t.same(await readdir(path.join(s.service.config.storageDir, 'tmp')), [], '…also from the temp folder they were moved to');
  t.equal((await tusRequest(slow.headers.location!, 'HEAD', {})).status, 404);
  const listed = (await s.service.app.inject(`/API/ViewAllFiles?AccessToken=${s.token}&BucketId=${s.bucketId}`)).json();
  t.same(listed.AllFiles.map((f: { FileKey: number }) => f.FileKey), [Number(fast.headers['upload-file-key'])], 'the first file stays, alone');
});

t.test('bytes without state, left by a crash, are swept once they are an hour old', async (t) => {
  const s = await setupResumable(t);
  const { sweepOrphanResumables } = await import('../src/services/resumable-sweeps.js');
  const live = await createResumable(s, 10, 'live.txt');
  const orphan = 'f'.repeat(32);
  await writeFile(path.join(s.service.config.storageDir, 'resumable', orphan), 'left');
  t.equal(await sweepOrphanResumables(s.service.app.resumable), 0, 'young bytes are left alone');
  t.equal(await sweepOrphanResumables(s.service.app.resumable, -1000), 1, 'old bytes without state go');
  t.same(await resumableFiles(s.service), [live.headers.location!.split('/').pop()], 'an upload with state keeps its bytes');
});

t.test('DELETE terminates an upload: 204, state and bytes gone', async (t) => {
  const s = await setupResumable(t);
  const created = await createResumable(s, 100, 'bye.txt');
  const location = created.headers.location!;
  await tusRequest(location, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, randomBytes(50));
  t.equal((await resumableFiles(s.service)).length, 1);
  const deleted = await tusRequest(location, 'DELETE', {});
  t.equal(deleted.status, 204);
  t.equal((await tusRequest(location, 'HEAD', {})).status, 404);
  t.same(await resumableFiles(s.service), []);
  t.equal((await tusRequest(location, 'DELETE', {})).status, 404);
});

t.test('an abandoned upload expires after its last PATCH: 410, then the sweep removes it', async (t) => {
  const s = await setupResumable(t, { RESUMABLE_UPLOAD_EXPIRY_SECONDS: '2' });
  const created = await createResumable(s, 100, 'late.txt');
  const location = created.headers.location!;
  await sleep(1100);
  const patched = await tusRequest(location, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, randomBytes(10));
  t.equal(patched.status, 204);
  const expires = Date.parse(patched.headers['upload-expires'] as string);
  // The header counts whole seconds: 1.1 s later, the expiry it names is at least 1 s later.
  t.ok(expires - Date.parse(created.headers['upload-expires'] as string) >= 1000, 'the PATCH answer names the expiry it moved on');
  await sleep(1100);
  t.equal((await tusRequest(location, 'HEAD', {})).status, 200, 'the PATCH pushed the expiry on');
  await sleep(1500);
  const gone = await tusRequest(location, 'HEAD', {});
  t.equal(gone.status, 410);
  const { sweepExpiredResumables } = await import('../src/services/resumable-sweeps.js');
  t.equal(await sweepExpiredResumables(s.service.app.resumable), 1);
  t.same(await resumableFiles(s.service), []);
  t.equal((await tusRequest(location, 'HEAD', {})).status, 404);
});

t.test('tus-js-client uploads in chunks and the file arrives whole', async (t) => {
  const s = await setupResumable(t);
  const { Upload } = await import('tus-js-client');
  const content = randomBytes(3 * MiB + 17);
  const result = await new Promise<{ url: string | null }>((resolve, reject) => {
    const upload = new Upload(content, {
      endpoint: s.endpoint,
      chunkSize: MiB,
      retryDelays: [0, 200],
      headers: { Authorization: `Bearer ${s.token}` },
      metadata: { filename: 'from-client.bin', BucketId: String(s.bucketId), AliveDays: '2' },
      onError: reject,
      onSuccess: () => resolve({ url: upload.url }),
    });
    upload.start();
  });
  t.match(result.url, /\/API\/ResumableUpload\/[a-f0-9]{32}$/);
  const listed = (await s.service.app.inject(`/API/ViewAllFiles?AccessToken=${s.token}&BucketId=${s.bucketId}`)).json();
  const file = listed.AllFiles.find((f: { RealFileName: string }) => f.RealFileName === 'from-client.bin');
  t.ok(file, 'listed');
  t.equal(sha256(await download(`${s.base}/Download/FromKey/${file.FileKey}`)), sha256(content));
  // Every PATCH on one instance: the sha256 was carried from PATCH to PATCH, not read again.
  const etag = (await fetch(`${s.base}/Download/FromKey/${file.FileKey}`, { method: 'HEAD' })).headers.get('etag');
  t.equal(etag, `"${sha256(content)}"`, 'the stored sha256 is that of the bytes');
});

t.test('two instances on one database and one storage folder: either serves any request of an upload', async (t) => {
  const { a, bBase } = await twoInstances(t);
  const content = randomBytes(3 * MiB);

  const created = await createResumable(a, content.length, 'travels.bin');
  const id = created.headers.location!.split('/').pop()!;
  const onB = `${bBase}/API/ResumableUpload/${id}`;
  const first = await tusRequest(onB, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, content.subarray(0, MiB));
  t.equal(first.status, 204, 'created on one instance, written on the other');

  // Two PATCHes at the same offset, one per instance: one writes, the other waits and finds the offset moved.
  const onA = `${a.base}/API/ResumableUpload/${id}`;
  const [x, y] = await Promise.all([
    tusRequest(onA, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': MiB }, content.subarray(MiB, 2 * MiB)),
    tusRequest(onB, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': MiB }, content.subarray(MiB, 2 * MiB)),
  ]);
  t.same([x.status, y.status].sort(), [204, 409]);
  t.equal((await tusRequest(onA, 'HEAD', {})).headers['upload-offset'], String(2 * MiB), 'the bytes were written once');

  const last = await tusRequest(onB, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 2 * MiB }, content.subarray(2 * MiB));
  t.equal(last.status, 204, last.body);
  t.equal(sha256(await download(`${a.base}/Download/FromKey/${last.headers['upload-file-key']}`)), sha256(content), 'finished on one, served by the other');
});

t.test('written by turns on two instances, the file is whole and its stored sha256 right', async (t) => {
  const { a, bBase } = await twoInstances(t);
  const content = randomBytes(4 * MiB + 7);
  const id = (await createResumable(a, content.length, 'turns.bin')).headers.location!.split('/').pop()!;
  // a, b, a, b: each instance last saw the upload two PATCHes ago.
  const bases = [a.base, bBase, a.base, bBase];
  let answer;
  for (const [i, base] of bases.entries()) {
    const end = i === bases.length - 1 ? content.length : (i + 1) * MiB;
    answer = await tusRequest(`${base}/API/ResumableUpload/${id}`, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': i * MiB }, content.subarray(i * MiB, end));
    t.equal(answer.status, 204, answer.body);
  }
  const fileUrl = `${a.base}/Download/FromKey/${answer!.headers['upload-file-key']}`;
  t.equal(sha256(await download(fileUrl)), sha256(content), 'byte-identical');
  t.equal((await fetch(fileUrl, { method: 'HEAD' })).headers.get('etag'), `"${sha256(content)}"`, 'the stored sha256 is that of the bytes');
});
