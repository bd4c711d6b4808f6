import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { resumableRefused } from '../src/errors.js';
import { createResumable, OCTETS, setupResumable } from './helpers/resumable.js';
import { tusRequest } from './helpers/tus.js';

const MiB = 1024 * 1024;

t.test('two PATCHes of one upload never interleave: the second waits or is refused', async (t) => {
  const s = await setupResumable(t);
  const content = randomBytes(4 * MiB);
  const created = await createResumable(s, content.length, 'both.bin');
  const location = created.headers.location!;
  const [a, b] = await Promise.all([
    tusRequest(location, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, content.subarray(0, 2 * MiB)),
    tusRequest(location, 'PATCH', { 'Content-Type': OCTETS, 'Upload-Offset': 0 }, content.subarray(0, 2 * MiB)),
  ]);
  t.same([a.status, b.status].sort(), [204, 409], 'one wrote, the other found the offset moved');
  const head = await tusRequest(location, 'HEAD', {});
  t.equal(head.headers['upload-offset'], String(2 * MiB));
  const lock = await s.service.app.db
    .selectFrom('resumable_uploads')
    .select(['lock_token', 'locked_until', 'lock_count'])
    .where('upload_id', '=', location.split('/').pop()!)
    .executeTakeFirstOrThrow();
  t.same(lock, { lock_token: null, locked_until: null, lock_count: 2 }, 'no lock outlives the answers; each PATCH took it once');
});

t.test('a PATCH whose lease another request took meanwhile records no offset and gets 423', async (t) => {
  const s = await setupResumable(t);
  const content = randomBytes(2 * MiB);
  const location = (await createResumable(s, content.length, 'stalled.bin')).headers.location!;
  const uploadId = location.split('/').pop()!;
  const rowOfUpload = () =>
    s.service.app.db.selectFrom('resumable_uploads').select(['offset_bytes', 'lock_token']).where('upload_id', '=', uploadId).executeTakeFirstOrThrow();

  const patch = request(location, {
    method: 'PATCH',
    headers: { 'Tus-Resumable': '1.0.0', 'Content-Type': OCTETS, 'Upload-Offset': '0', 'Content-Length': String(content.length) },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    patch.on('response', (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (text: string) => (body += text));
      response.on('end', () => resolve({ status: response.statusCode!, body }));
    });
    patch.on('error', reject);
  });
  patch.write(content.subarray(0, MiB));
  while ((await rowOfUpload()).lock_token === null) await sleep(20);
  // What a stall past the lease allows: another request's lock in the row.
  await s.service.app.db
    .updateTable('resumable_uploads')
    .set({ lock_token: 'another-request', locked_until: new Date(Date.now() + 60_000) })
    .where('upload_id', '=', uploadId)
    .execute();
  patch.end(content.subarray(MiB));

  const { status, body } = await answer;
  t.equal(status, 423);
  t.same(JSON.parse(body), resumableRefused.locked().envelope);
  t.same(await rowOfUpload(), { offset_bytes: 0, lock_token: 'another-request' }, 'no offset recorded, and the other lock stands');
});
