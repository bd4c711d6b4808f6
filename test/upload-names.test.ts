import t from 'tap';
import { fileRow, filesIn, sha256Of, startUploadService, storedPaths } from './helpers/uploaded-files.js';
import { upload } from './helpers/upload.js';
import { incompleteWrites } from './helpers/stored-files.js';

const INVALID = 'Your input contains several errors!';

t.test('a second file with a live file’s name is refused and nothing is overwritten', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const params = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
  const first = await upload({ baseUrl, before: params, fileName: 'report.pdf', size: 5000 });
  for (const placement of ['before', 'after'] as const) {
    const again = await upload({ baseUrl, [placement]: params, fileName: 'report.pdf', size: 7000 });
    t.same(again.body, { Code: -1, Message: 'There already exists a file with that name.' }, placement);
  }
  const rows = await filesIn(service, bucketId);
  t.equal(rows.length, 1);
  t.equal(await sha256Of(service, rows[0].storage_key), first.sha256, 'the first file is intact');
  t.equal((await storedPaths(service)).length, 1, 'the refused bytes are gone');
  const otherCase = await upload({ baseUrl, before: params, fileName: 'REPORT.pdf', size: 10 });
  t.equal(otherCase.body.Code, 0, 'names are compared exactly');
});

t.test('an expired file gives its name to a new upload', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const params = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
  const old = await upload({ baseUrl, before: params, fileName: 'daily.csv', size: 100 });
  const past = new Date(Date.now() - 2 * 86_400_000);
  await service.app.db.updateTable('files').set({ upload_time: past, expires_at: new Date(past.getTime() + 86_400_000) }).where('file_key', '=', old.body.FileKey as number).execute();
  const fresh = await upload({ baseUrl, before: params, fileName: 'daily.csv', size: 200 });
  t.equal(fresh.body.Code, 0);
  const rows = await filesIn(service, bucketId);
  t.same(rows.map((row) => row.file_key), [fresh.body.FileKey]);
  t.equal((await storedPaths(service)).length, 1, 'the expired file’s bytes went with its row');
});

t.test('uploads racing for a name an expired file holds: exactly one takes it', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const params = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
  const old = await upload({ baseUrl, before: params, fileName: 'contested.csv', size: 100 });
  const past = new Date(Date.now() - 2 * 86_400_000);
  await service.app.db.updateTable('files').set({ upload_time: past, expires_at: new Date(past.getTime() + 86_400_000) }).where('file_key', '=', old.body.FileKey as number).execute();
  const racers = await Promise.all(Array.from({ length: 6 }, () => upload({ baseUrl, after: params, fileName: 'contested.csv', size: 5000 })));
  const winners = racers.filter((r) => r.body.Code === 0);
  t.equal(winners.length, 1, 'one upload takes the name');
  t.same(
    racers.filter((r) => r.body.Code !== 0).map((r) => r.body),
    Array(5).fill({ Code: -1, Message: 'There already exists a file with that name.' }),
  );
  const rows = await filesIn(service, bucketId);
  t.same(rows.map((row) => row.sha256), [winners[0].sha256]);
  t.equal((await storedPaths(service)).length, 1, 'the expired file’s bytes and the losers’ are gone');
});

t.test('hostile file names are reduced to a safe last segment', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t);
  const params = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
  const cases: Array<[string, string]> = [
    ['../../x', 'x'],
    ['..\\..\\y.txt', 'y.txt'],
    ['C:\\Users\\me\\z.doc', 'z.doc'],
    ['nul\u0000byte.txt', 'nulbyte.txt'],
    ['tab\tand\u0007bell\u001b.txt', 'tabandbell.txt'],
    ['invoice\u202Efdp.exe', 'invoicefdp.exe'],
    ['Cafe\u0301.txt', 'Caf\u00e9.txt'],
    ['  spaced name .txt', '  spaced name .txt'],
  ];
  for (const [sent, stored] of cases) {
    const result = await upload({ baseUrl, before: params, fileName: sent, size: 10 });
    t.equal(result.body.Code, 0, JSON.stringify(sent));
    t.equal((await fileRow(service, result.body.FileKey as number))?.real_file_name, stored, JSON.stringify(sent));
  }
  const long = await upload({ baseUrl, before: params, fileName: `${'é'.repeat(1000)}.png`, size: 10 });
  const longName = (await fileRow(service, long.body.FileKey as number))?.real_file_name ?? '';
  t.ok(Buffer.byteLength(longName) <= 255, 'at most 255 bytes');
  t.match(longName, /^é+\.png$/, 'cut on a character boundary, extension kept');
  for (const empty of ['../', '..', '\u202E\u0000', '']) {
    const result = await upload({ baseUrl, before: params, fileName: empty, size: 10 });
    t.same(result.body, { Code: -10, Message: INVALID, Items: ['The file name is empty or not valid.'] }, JSON.stringify(empty));
  }
  t.same(await incompleteWrites(service.app.storage), []);
  const rows = await filesIn(service, bucketId);
  t.equal((await storedPaths(service)).length, rows.length, 'one stored object per row');
});
