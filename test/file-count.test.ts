import { Migrator, sql } from 'kysely';
import t from 'tap';
import { migrations } from '../db/migrations/index.js';
import { sweepExpired } from '../src/services/expiry.js';
import { createBucket } from './helpers/buckets.js';
import { createTestDatabase } from './helpers/database.js';
import { postForm, startService, type TestService } from './helpers/service.js';
import { storeFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

const DAY_MS = 86_400_000;

async function fileCount(service: TestService, bucketId: number): Promise<number> {
  const body = (await service.app.inject({ url: `/API/ViewBucketDetail?BucketId=${bucketId}` })).json();
  if (body.Code !== 0) throw new Error(`ViewBucketDetail failed: ${JSON.stringify(body)}`);
  return body.FileCount as number;
}

/** What FileCount must be, counted the slow way: the bucket's live rows. */
async function liveRows(service: TestService, bucketId: number): Promise<number> {
  const row = await service.app.db
    .selectFrom('files')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('bucket_id', '=', bucketId)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The kept counter against the rows it counts, for every bucket: they must never differ. */
async function counterDrift(service: TestService): Promise<Array<{ bucket_id: number; kept: number; rows: number }>> {
  const { rows } = await sql<{ bucket_id: number; kept: number; rows: number }>`
    SELECT b.bucket_id, kept.n::int AS kept, count(f.file_key)::int AS rows
    FROM buckets b
    CROSS JOIN LATERAL (SELECT coalesce(sum(c.n), 0) AS n FROM bucket_file_counts c WHERE c.bucket_id = b.bucket_id) AS kept
    LEFT JOIN files f ON f.bucket_id = b.bucket_id
    GROUP BY b.bucket_id, kept.n HAVING kept.n <> count(f.file_key)`.execute(service.app.db);
  const { rows: strays } = await sql<{ bucket_id: number }>`
    SELECT c.bucket_id FROM bucket_file_counts c WHERE NOT EXISTS (SELECT 1 FROM buckets b WHERE b.bucket_id = c.bucket_id)`.execute(service.app.db);
  return [...rows, ...strays.map(({ bucket_id }) => ({ bucket_id, kept: NaN, rows: 0 }))];
}

async function expireNow(service: TestService, fileKey: number): Promise<void> {
  const past = new Date(Date.now() - 2 * DAY_MS);
  await service.app.db.updateTable('files').set({ upload_time: past, expires_at: new Date(past.getTime() + DAY_MS) }).where('file_key', '=', fileKey).execute();
}

t.test('FileCount follows uploads, a replaced expired file, DeleteFile and expiry exactly', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const other = await createBucket(service, owner.token);
  const send = (fileName: string) => upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName, size: 10 });

  t.equal(await fileCount(service, bucketId), 0, 'a new bucket has no files');
  const keys: number[] = [];
  for (const name of ['a.txt', 'b.txt', 'c.txt']) keys.push((await send(name)).body.FileKey as number);
  t.equal(await fileCount(service, bucketId), 3, 'three uploads');

  t.same((await send('a.txt')).body, { Code: -1, Message: 'There already exists a file with that name.' });
  t.equal(await fileCount(service, bucketId), 3, 'a refused upload adds nothing');

  await expireNow(service, keys[0]!);
  t.equal(await fileCount(service, bucketId), 2, 'an expired file stops counting at once, before any sweep');
  const replaced = await send('a.txt');
  t.equal(replaced.body.Code, 0, 'an upload takes the expired file’s name');
  t.equal(await fileCount(service, bucketId), 3, 'the replaced file is not counted twice');

  const deleted = await postForm(service.app, '/API/DeleteFile', { AccessToken: owner.token, FileKey: keys[1]! });
  t.equal(deleted.json().Code, 0);
  t.equal(await fileCount(service, bucketId), 2, 'DeleteFile');

  await expireNow(service, keys[2]!);
  t.equal(await fileCount(service, bucketId), 1, 'expired, not swept');
  await sweepExpired(service.context());
  t.equal(await fileCount(service, bucketId), 1, 'swept: still one');
  t.equal(await fileCount(service, bucketId), await liveRows(service, bucketId));
  t.equal(await fileCount(service, other), 0, 'another bucket is untouched');
  t.same(await counterDrift(service), [], 'every bucket’s counter equals its rows');
});

t.test('FileCount stays exact under concurrent uploads, some racing for one name', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const names = [...Array.from({ length: 24 }, (_, i) => `file-${i}.bin`), ...Array.from({ length: 8 }, () => 'contested.bin')];
  const results = await Promise.all(
    names.map((fileName) => upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 3 }, fileName, size: 2048 })),
  );
  const succeeded = results.filter((result) => result.body.Code === 0).length;
  t.equal(succeeded, 25, 'every distinct name once, the contested name once');
  t.equal(await fileCount(service, bucketId), 25);
  t.equal(await liveRows(service, bucketId), 25);
  // The uploads' statements added to the slots of their connections, not all to one row that each held until its commit.
  const slots = await service.app.db.selectFrom('bucket_file_counts').select('slot').where('bucket_id', '=', bucketId).execute();
  t.ok(slots.length > 1, `counted in ${slots.length} slots`);

  // Deletions racing with each other and with more uploads.
  const keys = results.filter((result) => result.body.Code === 0).map((result) => result.body.FileKey as number);
  await Promise.all([
    ...keys.slice(0, 10).map((FileKey) => postForm(service.app, '/API/DeleteFile', { AccessToken: owner.token, FileKey })),
    ...keys.slice(0, 5).map((FileKey) => postForm(service.app, '/API/DeleteFile', { AccessToken: owner.token, FileKey })),
    ...Array.from({ length: 6 }, (_, i) => upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 3 }, fileName: `late-${i}.bin`, size: 100 })),
  ]);
  t.equal(await fileCount(service, bucketId), 21, '25 − 10 deleted + 6 uploaded');
  t.equal(await liveRows(service, bucketId), 21);
  t.same(await counterDrift(service), []);
});

t.test('a bucket or app deletion leaves every other bucket’s count exact', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const doomedApp = await service.newApp();
  const kept = await createBucket(service, owner.token);
  const doomed = await createBucket(service, owner.token);
  const ofDoomedApp = await createBucket(service, doomedApp.token);
  for (let i = 0; i < 5; i++) {
    await storeFile(service, kept);
    await storeFile(service, doomed);
    await storeFile(service, ofDoomedApp);
  }
  await storeFile(service, kept, { expired: true });
  t.equal(await fileCount(service, kept), 5, 'the expired one is not counted');
  t.equal((await postForm(service.app, '/API/DeleteBucket', { AccessToken: owner.token, BucketId: doomed })).json().Code, 0);
  t.equal((await postForm(service.app, '/API/DeleteApp', { AccessToken: doomedApp.token, AppId: doomedApp.appId })).json().Code, 0);
  t.equal(await fileCount(service, kept), 5);
  t.same(await counterDrift(service), []);
});

t.test('the migration counts the files already there', async (t) => {
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  const { db } = database.handle;
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  t.equal((await migrator.migrateTo('0001_initial')).error, undefined);
  await db.insertInto('apps').values({ app_id: 'app', secret_hash: 'x' }).execute();
  const bucketIds: number[] = [];
  for (const name of ['first', 'second', 'third']) {
    bucketIds.push((await db.insertInto('buckets').values({ name, open_to_read: true, open_to_upload: false, app_id: 'app' }).returning('bucket_id').executeTakeFirstOrThrow()).bucket_id);
  }
  const file = (bucketId: number, i: number, expiresAt: Date) => ({
    bucket_id: bucketId,
    real_file_name: `f${i}`,
    file_extension: '',
    size_bytes: 0,
    upload_time: new Date(),
    alive_days: 1,
    expires_at: expiresAt,
    storage_key: `k${bucketId}x${i}`,
    sha256: '',
  });
  const later = new Date(Date.now() + DAY_MS);
  await db.insertInto('files').values([0, 1, 2, 3].map((i) => file(bucketIds[0]!, i, later))).execute();
  await db.insertInto('files').values([file(bucketIds[1]!, 0, later), file(bucketIds[1]!, 1, new Date(Date.now() - 1000))]).execute();
  t.equal((await migrator.migrateToLatest()).error, undefined);
  const kept = sql<number>`(SELECT coalesce(sum(c.n), 0) FROM bucket_file_counts c WHERE c.bucket_id = b.bucket_id)`;
  const { rows: counted } = await sql<{ n: number }>`SELECT ${kept} AS n FROM buckets b ORDER BY b.bucket_id`.execute(db);
  t.same(counted.map((row) => Number(row.n)), [4, 2, 0], 'rows counted, the expired one included (readers subtract it)');
  const { rows } = await sql<{ n: number }>`
    SELECT ${kept} - (SELECT count(*) FROM files f WHERE f.bucket_id = b.bucket_id AND f.expires_at <= now()) AS n
    FROM buckets b ORDER BY b.bucket_id`.execute(db);
  t.same(rows.map((row) => Number(row.n)), [4, 1, 0], 'FileCount as read');

  // The triggers the migration installed go on from the counts it moved.
  await db.insertInto('files').values(file(bucketIds[2]!, 0, later)).execute();
  await db.deleteFrom('files').where('bucket_id', '=', bucketIds[0]!).where('real_file_name', '=', 'f0').execute();
  const { rows: after } = await sql<{ n: number }>`SELECT ${kept} AS n FROM buckets b ORDER BY b.bucket_id`.execute(db);
  t.same(after.map((row) => Number(row.n)), [3, 2, 1], 'an insert and a delete after the migration');
});
