import { sql } from 'kysely';
import t from 'tap';
import { compiledOnce } from '../db/compiled-once.js';
import { findPublicFileByKey, findPublicFileByPath } from '../src/services/downloadable-files.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { startService } from './helpers/service.js';
import { storeFile } from './helpers/stored-files.js';

t.test('a query compiled once answers every later call with that call’s own arguments', async (t) => {
  const service = await startService(t);
  const { db } = service.app;
  const owner = await service.newApp();
  const publicName = uniqueBucketName('Public');
  const publicBucket = await createBucket(service, owner.token, { name: publicName, openToRead: true });
  const privateBucket = await createBucket(service, owner.token, { openToRead: false });
  const names = ["it's.txt", 'Résumé 2026.pdf', 'plain.bin'];
  const files = [];
  for (const name of names) files.push(await storeFile(service, publicBucket, { name }));
  const hidden = await storeFile(service, privateBucket, { name: 'hidden.txt' });

  // The first call compiles; the constant (the bucket must be OpenToRead) stays in its place after it.
  for (const [i, file] of files.entries()) {
    t.equal((await findPublicFileByKey(db, file.fileKey))?.storageKey, file.storageKey, `by key, file ${i}`);
    t.equal((await findPublicFileByPath(db, publicName.toUpperCase(), names[i]!))?.fileKey, file.fileKey, `by path in any case, ${names[i]}`);
  }
  t.equal(await findPublicFileByKey(db, hidden.fileKey), undefined, 'a file of a private bucket is not found by key');
  t.equal(await findPublicFileByKey(db, 999_999_999), undefined, 'nor a key that names no file');
  t.equal(await findPublicFileByPath(db, publicName, 'IT\'S.TXT'), undefined, 'the file name matches exactly');

  const keysBetween = compiledOnce((db, low: number, high: number) =>
    db.selectFrom('files').select('file_key').where('file_key', '>=', low).where('file_key', '<=', high).where(sql<boolean>`true`).orderBy('file_key'),
  );
  const keys = [...files.map((file) => file.fileKey), hidden.fileKey].sort((a, b) => a - b);
  t.same((await keysBetween(db, keys[0]!, keys[1]!)).map((row) => row.file_key), keys.slice(0, 2), 'two arguments, each in its place');
  t.same((await keysBetween(db, keys[1]!, keys[3]!)).map((row) => row.file_key), keys.slice(1, 4));
  t.same(await keysBetween(db, keys[3]!, keys[0]!), [], 'and swapped');
});

t.test('a build whose argument is not a value of the query is refused on its first call', async (t) => {
  const service = await startService(t);
  const unused = compiledOnce((db, _limit: number) => db.selectFrom('files').select('file_key'));
  await t.rejects(unused(service.app.db, 5), /argument 0 is not a value of the query/);
});
