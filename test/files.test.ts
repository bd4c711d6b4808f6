import t from 'tap';
import { parseIds } from '../src/http/files.js';
import { ApiError } from '../src/errors.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { postForm, startService } from './helpers/service.js';
import { hasBytes, storeFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

const INVALID = 'Your input contains several errors!';
const NOT_FOUND = { Code: -1, Message: 'Could not find that file.' };
const FILE_FIELDS = ['AliveDays', 'BucketId', 'DownloadTimes', 'FileExtension', 'FileKey', 'InternetPath', 'JFileSize', 'RealFileName', 'UploadTime'];

t.test('ViewOneFile returns exactly the nine fields with their types', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketName = uniqueBucketName('view');
  const bucketId = await createBucket(service, owner.token, { name: bucketName });
  const before = Date.now();
  const uploaded = await upload({
    baseUrl,
    before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 30 },
    fileName: 'Résumé 2026.pdf',
    size: 12345,
  });
  const fileKey = uploaded.body.FileKey as number;

  for (const url of [`/API/ViewOneFile?FileKey=${fileKey}`, `/api/viewonefiletry?filekey=${fileKey}`]) {
    const response = await service.app.inject({ url, headers: { host: 'files.example.com:8443' } });
    const body = response.json();
    t.equal(body.Code, 0, url);
    t.equal(typeof body.Message, 'string');
    t.same(Object.keys(body.File).sort(), FILE_FIELDS);
    t.match(body.File, {
      FileKey: fileKey,
      RealFileName: 'Résumé 2026.pdf',
      FileExtension: '.pdf',
      JFileSize: 12345,
      DownloadTimes: 0,
      BucketId: bucketId,
      AliveDays: 30,
      InternetPath: `http://files.example.com:8443/${bucketName}/R%C3%A9sum%C3%A9%202026.pdf`,
    });
    t.match(body.File.UploadTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const uploadTime = Date.parse(body.File.UploadTime);
    t.ok(uploadTime >= before - 1000 && uploadTime <= Date.now() + 1000, 'UploadTime is the time of the upload');
  }

  // InternetPaths are computed when read: they follow a rename.
  const renamed = uniqueBucketName('renamed');
  await postForm(service.app, '/API/EditBucket', { AccessToken: owner.token, BucketId: bucketId, NewBucketName: renamed, OpenToRead: true, OpenToUpload: false });
  const after = (await service.app.inject({ url: `/API/ViewOneFile?FileKey=${fileKey}` })).json();
  t.equal(after.File.InternetPath, `http://localhost:80/${renamed}/R%C3%A9sum%C3%A9%202026.pdf`, 'the request’s own origin');
});

t.test('PUBLIC_URL sets the origin of every InternetPath', async (t) => {
  const service = await startService(t, { env: { PUBLIC_URL: 'https://cdn.example.org/files/' } });
  const owner = await service.newApp();
  const bucketName = uniqueBucketName('pub');
  const bucketId = await createBucket(service, owner.token, { name: bucketName });
  const file = await storeFile(service, bucketId, { name: 'a b#c?.txt' });
  const body = (await service.app.inject({ url: `/API/ViewOneFile?FileKey=${file.fileKey}` })).json();
  t.equal(body.File.InternetPath, `https://cdn.example.org/files/${bucketName}/a%20b%23c%3F.txt`);
});

t.test('ViewOneFile refuses unknown, expired and malformed keys', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const expired = await storeFile(service, bucketId, { expired: true });
  t.same((await service.app.inject({ url: `/API/ViewOneFile?FileKey=${expired.fileKey}` })).json(), NOT_FOUND);
  t.same((await service.app.inject({ url: '/API/ViewOneFile?FileKey=999999999' })).json(), NOT_FOUND);
  for (const [value, item] of [
    ['abc', "The value 'abc' is not valid for FileKey."],
    ['-1', 'The field FileKey must be between 1 and 9007199254740991.'],
    ['99999999999999999999', "The value '99999999999999999999' is not valid for FileKey."],
    ['', 'The FileKey field is required.'],
  ]) {
    const response = await service.app.inject({ url: `/API/ViewOneFile?FileKey=${value}` });
    t.equal(response.statusCode, 200);
    t.same(response.json(), { Code: -10, Message: INVALID, Items: [item] }, value);
  }
});

t.test('ViewMultiFiles: order asked, each once, unknown and expired left out', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const [a, b, c] = [await storeFile(service, bucketId), await storeFile(service, bucketId), await storeFile(service, bucketId)];
  const expired = await storeFile(service, bucketId, { expired: true });

  const ids = ` ${c.fileKey}, ,${a.fileKey},${expired.fileKey},987654321,,${c.fileKey} , ${b.fileKey},`;
  for (const path of ['/API/ViewMultiFiles', '/API/ViewMultiFilesTry', '/api/viewmultifiles']) {
    const body = (await service.app.inject({ url: `${path}?ids=${encodeURIComponent(ids)}` })).json();
    t.equal(body.Code, 0);
    t.same(body.Items.map((f: { FileKey: number }) => f.FileKey), [c.fileKey, a.fileKey, b.fileKey], path);
    t.same(Object.keys(body.Items[0]).sort(), FILE_FIELDS);
  }
  const none = (await service.app.inject({ url: '/API/ViewMultiFiles?Ids=,,%20,' })).json();
  t.same(none.Items, [], 'only blanks: an empty list');
});

t.test('ViewMultiFiles refuses malformed and oversized Ids', async (t) => {
  const service = await startService(t);
  const bad = (await service.app.inject({ url: '/API/ViewMultiFiles?Ids=1,two,3.5,-4,5' })).json();
  t.same(bad, {
    Code: -10,
    Message: INVALID,
    Items: ["The value 'two' is not a valid FileKey in Ids.", "The value '3.5' is not a valid FileKey in Ids.", "The value '-4' is not a valid FileKey in Ids."],
  });
  t.same((await service.app.inject({ url: '/API/ViewMultiFiles' })).json(), { Code: -10, Message: INVALID, Items: ['The Ids field is required.'] });
  const thousand = Array.from({ length: 1000 }, (_, i) => i + 1).join(',');
  t.equal((await service.app.inject({ url: `/API/ViewMultiFiles?Ids=${thousand}` })).json().Code, 0, '1000 entries are fine');
  const tenThousand = Array.from({ length: 10_000 }, (_, i) => i + 1).join(',');
  const tooMany = await service.app.inject({ url: `/API/ViewMultiFiles?Ids=${tenThousand}` });
  t.equal(tooMany.statusCode, 200);
  t.equal(tooMany.json().Code, -10);
});

t.test('parseIds', async (t) => {
  t.same(parseIds(' 3 ,1,, 2 '), [3, 1, 2]);
  t.same(parseIds(''), []);
  t.throws(() => parseIds('0'), ApiError);
  t.throws(() => parseIds('1;2'), ApiError);
  const tooMany = t.throws(() => parseIds(Array(1001).fill('1').join(','))) as ApiError;
  t.same(tooMany.items, ['The field Ids may list at most 1000 FileKeys.']);
});

t.test('ViewAllFiles: the owner always, other apps only when OpenToRead', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const other = await service.newApp();
  const openId = await createBucket(service, owner.token, { openToRead: true });
  const closedId = await createBucket(service, owner.token, { openToRead: false });
  const files = [await storeFile(service, openId), await storeFile(service, openId)];
  await storeFile(service, openId, { expired: true });
  await storeFile(service, closedId);

  const list = async (token: string, bucketId: number) =>
    (await service.app.inject({ url: `/API/ViewAllFilesTry?accessToken=${token}&BucketId=${bucketId}` })).json();
  const mine = await list(owner.token, openId);
  t.equal(mine.Code, 0);
  t.equal(mine.BucketId, openId);
  t.same(mine.AllFiles.map((f: { FileKey: number }) => f.FileKey), files.map((f) => f.fileKey), 'live files ordered by FileKey');
  t.same((await list(other.token, openId)).AllFiles.length, 2, 'another app reads an OpenToRead bucket');
  t.same(await list(other.token, closedId), { Code: -1, Message: 'This is not your bucket!' });
  t.equal((await list(owner.token, closedId)).AllFiles.length, 1, 'the owner reads a closed bucket');
  t.same(await list(owner.token, 987654321), { Code: -1, Message: 'Could not find that bucket.' });
  t.same(await list('forged', openId), { Code: -1, Message: 'Invalid or expired AccessToken.' });
});

t.test('DeleteFile: owner only; the row goes, then the bytes', async (t) => {
  const service = await startService(t);
  const owner = await service.newApp();
  const other = await service.newApp();
  const bucketId = await createBucket(service, owner.token, { openToUpload: true });
  const file = await storeFile(service, bucketId);

  const refused = await postForm(service.app, '/API/DeleteFile', { AccessToken: other.token, FileKey: file.fileKey });
  t.same(refused.json(), { Code: -1, Message: 'This is not your bucket!' });
  t.ok(await hasBytes(service.app.storage, file.storageKey), 'another app changes nothing');

  const deleted = await postForm(service.app, '/api/deletefile', { accesstoken: owner.token, filekey: file.fileKey });
  t.same(deleted.json(), { Code: 0, Message: 'Successfully deleted your file!' });
  t.notOk(await hasBytes(service.app.storage, file.storageKey), 'the bytes are gone');
  t.same((await service.app.inject({ url: `/API/ViewOneFile?FileKey=${file.fileKey}` })).json(), NOT_FOUND);
  t.same((await postForm(service.app, '/API/DeleteFile', { AccessToken: owner.token, FileKey: file.fileKey })).json(), NOT_FOUND);
  const expired = await storeFile(service, bucketId, { expired: true });
  t.same((await postForm(service.app, '/API/DeleteFile', { AccessToken: owner.token, FileKey: expired.fileKey })).json(), NOT_FOUND);
  t.same((await postForm(service.app, '/API/DeleteFile', { AccessToken: owner.token })).json(), {
    Code: -10,
    Message: INVALID,
    Items: ['The FileKey field is required.'],
  });
});
