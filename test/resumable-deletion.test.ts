import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { createBucket } from './helpers/buckets.js';
import { OCTETS } from './helpers/resumable.js';
import { postForm, startService, type TestService } from './helpers/service.js';
import { incompleteWrites, storedKeys } from './helpers/stored-files.js';
import { metadata, tusRequest } from './helpers/tus.js';

/**
 * CONTRACT section 7: DeleteApp and DeleteBucket also remove every incomplete upload into those
 * buckets with its bytes; their URLs answer 404 from then on, and nothing stays in storage.
 */

const MiB = 1024 * 1024;

async function startResumable(service: TestService, token: string, bucketId: number, size: number, name: string): Promise<string> {
  const created = await tusRequest(`${await listening(service)}/API/ResumableUpload`, 'POST', {
    Authorization: `Bearer ${token}`,
    'Upload-Length': size,
    'Upload-Metadata': metadata({ filename: name, BucketId: String(bucketId), AliveDays: '1' }),
  });
  if (created.status !== 201) throw new Error(`creation: ${created.status} ${created.body}`);
  const location = created.headers.location!;
  const first = await tusRequest(location, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, randomBytes(Math.min(size - 1, 6 * MiB)));
  if (first.status !== 204) throw new Error(`first PATCH: ${first.status} ${first.body}`);
  return location;
}

const bases = new WeakMap<TestService, string>();
async function listening(service: TestService): Promise<string> {
  if (!bases.has(service)) bases.set(service, await service.listen());
  return bases.get(service)!;
}

/** What incomplete uploads into `bucketIds` leave: their rows, their bytes in the store, anything else in the store. */
async function leftovers(service: TestService, bucketIds: number[]) {
  const rows = await service.app.db.selectFrom('resumable_uploads').select('upload_id').where('bucket_id', 'in', bucketIds).orderBy('upload_id').execute();
  const bytes: string[] = [];
  for await (const page of service.app.resumable.resumable.list()) bytes.push(...page.map((entry) => entry.id));
  return { rows: rows.map((row) => row.upload_id), bytes, objects: await storedKeys(service.app.storage), writes: await incompleteWrites(service.app.storage) };
}

const NOTHING = { rows: [], bytes: [], objects: [], writes: [] };

t.test('DeleteBucket removes the incomplete uploads into the bucket', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const location = await startResumable(service, owner.token, bucketId, 8 * MiB, 'half.bin');
  const deleted = await postForm(service.app, '/API/DeleteBucket', { AccessToken: owner.token, BucketId: bucketId });
  t.equal(deleted.json().Code, 0);
  t.equal((await tusRequest(location, 'HEAD', {})).status, 404, 'HEAD answers 404');
  const patch = await tusRequest(location, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 6 * MiB }, randomBytes(MiB));
  t.equal(patch.status, 404, 'a PATCH answers 404 and appends nothing');
  t.same(await leftovers(service, [bucketId]), NOTHING, 'no row and no bytes are left');
});

t.test('DeleteApp removes the incomplete uploads into its buckets, and its own into others', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const other = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const othersOpenBucket = await createBucket(service, other.token, { openToUpload: true });
  const intoOwn = await startResumable(service, owner.token, bucketId, 8 * MiB, 'own.bin');
  const byOther = await startResumable(service, other.token, bucketId, 8 * MiB, 'by-other.bin').catch(() => undefined);
  const intoOthers = await startResumable(service, owner.token, othersOpenBucket, 8 * MiB, 'elsewhere.bin');
  const othersOwn = await startResumable(service, other.token, othersOpenBucket, 8 * MiB, 'kept.bin');
  t.equal(byOther, undefined, "another app may not upload into the owner's closed bucket");
  const deleted = await postForm(service.app, '/API/DeleteApp', { AccessToken: owner.token, AppId: owner.appId });
  t.equal(deleted.json().Message, 'Successfully deleted that app and all files.');
  for (const location of [intoOwn, intoOthers]) t.equal((await tusRequest(location, 'HEAD', {})).status, 404, 'HEAD answers 404');
  t.equal((await tusRequest(othersOwn, 'HEAD', {})).status, 200, "another app's upload into its own bucket stays");
  const left = await leftovers(service, [bucketId, othersOpenBucket]);
  t.same(left.rows, [othersOwn.split('/').pop()], "only the other app's upload has a row");
  t.same(left.bytes, left.rows, 'and only it has bytes');
});

t.test('a PATCH running while its bucket is deleted is refused, and nothing is left', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const base = await listening(service);
  const created = await tusRequest(`${base}/API/ResumableUpload`, 'POST', {
    Authorization: `Bearer ${owner.token}`,
    'Upload-Length': 16 * MiB,
    'Upload-Metadata': metadata({ filename: 'racing.bin', BucketId: String(bucketId), AliveDays: '1' }),
  });
  const location = created.headers.location!;
  const answer = new Promise<number>((resolve, reject) => {
    const request = http.request(location, { method: 'PATCH', headers: { 'Tus-Resumable': '1.0.0', 'Content-Type': OCTETS, 'Upload-Offset': 0, 'Content-Length': 16 * MiB } });
    request.on('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
    void (async () => {
      const chunk = randomBytes(MiB);
      for (let i = 0; i < 16; i++) {
        if (!request.write(chunk)) await new Promise((r) => request.once('drain', r));
        // Half-way through the body, the bucket goes.
        if (i === 7) {
          await sleep(200);
          const deleted = await postForm(service.app, '/API/DeleteBucket', { AccessToken: owner.token, BucketId: bucketId });
          t.equal(deleted.json().Code, 0, 'the bucket is deleted while the PATCH runs');
        }
      }
      request.end();
    })().catch(reject);
  });
  const status = await answer;
  t.ok(status === 404 || status === 409 || status === 423 || status === 403, `the PATCH is refused (${status})`);
  t.same(await service.app.db.selectFrom('files').select('file_key').where('bucket_id', '=', bucketId).execute(), [], 'no file row');
  t.same(await leftovers(service, [bucketId]), NOTHING, 'no row and no bytes are left');
});
