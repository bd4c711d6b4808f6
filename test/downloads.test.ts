import t from 'tap';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { download } from './helpers/download.js';
import { postForm, startService, type TestService } from './helpers/service.js';
import { readBytes, storeFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

const NOT_FOUND = { Code: -1, Message: 'Could not find that file.' };

async function publicBucket(service: TestService, token: string, openToRead = true) {
  const name = uniqueBucketName('dl');
  return { name, bucketId: await createBucket(service, token, { name, openToRead }) };
}

t.test('a multi-megabyte file comes back byte for byte at its InternetPath and by its key', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const { name, bucketId } = await publicBucket(service, owner.token);
  const size = 12 * 1024 * 1024 + 7;
  const uploaded = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'big data.bin', size });
  t.equal(uploaded.body.Code, 0);
  const fileKey = uploaded.body.FileKey as number;
  const internetPath = new URL(uploaded.body.Path as string).pathname;
  t.equal(internetPath, `/${name}/big%20data.bin`);

  for (const path of [
    internetPath,
    `/${name.toUpperCase()}/big%20data.bin`,
    `/Download/FromKey/${fileKey}`,
    `/download/fromkey/${fileKey}.bin`,
    `/Download/FromKey/${fileKey}.anything`,
  ]) {
    const response = await download(baseUrl, path);
    t.equal(response.status, 200, path);
    t.equal(response.sha256, uploaded.sha256, `${path}: the bytes of the upload`);
    t.equal(response.headers['content-length'], String(size));
    t.equal(response.headers['accept-ranges'], 'bytes');
    t.equal(response.headers.etag, `"${uploaded.sha256}"`, 'a strong ETag: the sha256 of the content');
    t.ok(Date.parse(response.headers['last-modified'] ?? ''), 'Last-Modified');
    t.equal(response.headers['content-type'], 'application/octet-stream');
    t.equal(response.headers['content-disposition'], 'attachment; filename="big data.bin"');
    t.equal(response.headers['x-content-type-options'], 'nosniff');
    t.equal(response.headers['content-security-policy'], 'sandbox');
  }
  t.same((await download(baseUrl, `/${name}/BIG%20DATA.BIN`)).json, NOT_FOUND, 'the file name matches exactly');
});

t.test('single ranges, suffix ranges, unsatisfiable and multiple ranges', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const { name, bucketId } = await publicBucket(service, owner.token);
  const uploaded = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'range.txt', size: 1000 });
  const row = await service.app.db.selectFrom('files').select('storage_key').where('file_key', '=', uploaded.body.FileKey as number).executeTakeFirstOrThrow();
  const content = (await readBytes(service.app.storage, row.storage_key))!;
  const size = content.length;
  const path = `/${name}/range.txt`;
  const ranged = (range: string) => download(baseUrl, path, { headers: { range } });

  let response = await ranged('bytes=0-9');
  t.equal(response.status, 206);
  t.equal(response.headers['content-range'], `bytes 0-9/${size}`);
  t.equal(response.headers['content-length'], '10');
  t.same(response.body, content.subarray(0, 10));

  response = await ranged('bytes=5-');
  t.equal(response.status, 206);
  t.equal(response.headers['content-range'], `bytes 5-${size - 1}/${size}`);
  t.same(response.body, content.subarray(5));

  response = await ranged('bytes=-100');
  t.equal(response.status, 206, 'the last 100 bytes');
  t.equal(response.headers['content-range'], `bytes 900-999/${size}`);
  t.equal(response.headers['content-length'], '100');
  t.same(response.body, content.subarray(900));

  response = await ranged(`bytes=-${size + 500}`);
  t.equal(response.status, 206, 'a suffix longer than the file selects all of it (RFC 9110)');
  t.equal(response.headers['content-range'], `bytes 0-${size - 1}/${size}`);
  t.same(response.body, content);

  response = await ranged('bytes=990-2000');
  t.equal(response.headers['content-range'], `bytes 990-999/${size}`, 'an end past the file is cut to it');
  t.same(response.body, content.subarray(990));

  response = await ranged(`bytes=${size}-`);
  t.equal(response.status, 416);
  t.equal(response.headers['content-range'], `bytes */${size}`);
  t.same(response.json, { Code: -1, Message: 'The requested range is not within the file.' });
  t.equal(response.headers['x-content-type-options'], 'nosniff');

  response = await ranged('bytes=0-1,5-6');
  t.equal(response.status, 200, 'several ranges: the whole file');
  t.notOk(response.headers['content-range']);
  t.same(response.body, content);

  response = await ranged('bytes=0-5,3-9');
  t.equal(response.status, 206, 'overlapping ranges merge into one');
  t.equal(response.headers['content-range'], `bytes 0-9/${size}`);

  response = await ranged('items=0-5');
  t.equal(response.status, 200, 'a unit other than bytes is ignored');
  t.same(response.body, content);
});

t.test('conditional GET and HEAD', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const { name, bucketId } = await publicBucket(service, owner.token);
  await storeFile(service, bucketId, { name: 'photo.png' });
  const path = `/${name}/photo.png`;

  const head = await download(baseUrl, path, { method: 'HEAD' });
  t.equal(head.status, 200);
  t.equal(head.body.length, 0);
  t.equal(head.headers['content-length'], '41');
  t.equal(head.headers['content-type'], 'image/png');
  t.equal(head.headers['content-security-policy'], 'sandbox');
  const etag = head.headers.etag!;

  const notModified = await download(baseUrl, path, { headers: { 'if-none-match': etag } });
  t.equal(notModified.status, 304);
  t.equal(notModified.body.length, 0);
  t.equal(notModified.headers.etag, etag);
  t.equal((await download(baseUrl, path, { headers: { 'if-none-match': '"other"' } })).status, 200);
  t.equal((await download(baseUrl, path, { headers: { 'if-modified-since': head.headers['last-modified']! } })).status, 304);

  const precondition = await download(baseUrl, path, { headers: { 'if-match': '"other"' } });
  t.equal(precondition.status, 412);
  t.equal(precondition.json?.Code, -1);
});

t.test('only types safe to show inline are inline; everything else is an attachment', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const { name, bucketId } = await publicBucket(service, owner.token);
  const cases: Array<[string, string, 'inline' | 'attachment']> = [
    ['page.html', 'application/octet-stream', 'attachment'],
    ['page.HTM', 'application/octet-stream', 'attachment'],
    ['drawing.svg', 'application/octet-stream', 'attachment'],
    ['script.js', 'application/octet-stream', 'attachment'],
    ['module.mjs', 'application/octet-stream', 'attachment'],
    ['data.xml', 'application/octet-stream', 'attachment'],
    ['noextension', 'application/octet-stream', 'attachment'],
    ['image.png', 'image/png', 'inline'],
    ['IMAGE.JPG', 'image/jpeg', 'inline'],
    ['doc.pdf', 'application/pdf', 'inline'],
    ['notes.txt', 'text/plain; charset=utf-8', 'inline'],
    ['clip.mp4', 'video/mp4', 'inline'],
    ['song.mp3', 'audio/mpeg', 'inline'],
  ];
  for (const [fileName, type, disposition] of cases) {
    const file = await storeFile(service, bucketId, { name: fileName });
    for (const path of [`/${name}/${fileName}`, `/Download/FromKey/${file.fileKey}.html`]) {
      const response = await download(baseUrl, path);
      t.equal(response.status, 200, path);
      t.equal(response.headers['content-type'], type, `${path} type`);
      t.equal(response.headers['content-disposition'], `${disposition}; filename=${fileName}`, `${path} disposition`);
      t.equal(response.headers['x-content-type-options'], 'nosniff');
      t.equal(response.headers['content-security-policy'], 'sandbox');
    }
  }
});

t.test('download, sd and name options; file names encoded per RFC 6266/5987', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const { name, bucketId } = await publicBucket(service, owner.token);
  await storeFile(service, bucketId, { name: 'Résumé 2026.pdf' });
  const path = `/${name}/${encodeURIComponent('Résumé 2026.pdf')}`;
  const disposition = async (query: string) => (await download(baseUrl, `${path}${query}`)).headers['content-disposition'];

  t.equal(await disposition(''), `inline; filename="Resume 2026.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%202026.pdf`);
  t.equal(await disposition('?download=1'), `attachment; filename="Resume 2026.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%202026.pdf`);
  t.equal(await disposition('?sd=yes'), `attachment; filename="Resume 2026.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%202026.pdf`);
  t.equal(await disposition('?Download=true'), `attachment; filename="Resume 2026.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%202026.pdf`, 'names in any case');
  t.equal(await disposition('?download='), `inline; filename="Resume 2026.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%202026.pdf`, 'an empty value asks nothing');
  t.equal(
    await disposition(`?name=${encodeURIComponent('Отчёт.pdf')}`),
    `inline; filename=_____.pdf; filename*=UTF-8''%D0%9E%D1%82%D1%87%D1%91%D1%82.pdf`,
  );
  t.equal(
    await disposition(`?sd=1&name=${encodeURIComponent('日本語 ファイル.pdf')}`),
    `attachment; filename="___ ____.pdf"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E%20%E3%83%95%E3%82%A1%E3%82%A4%E3%83%AB.pdf`,
  );

  // Header injection: CR, LF and quotes never reach the header unencoded.
  const evil = await disposition(`?name=${encodeURIComponent('a"b\r\nSet-Cookie: x=1;.pdf')}`);
  t.equal(evil, `inline; filename="a_bSet-Cookie: x=1;.pdf"; filename*=UTF-8''a%22bSet-Cookie%3A%20x%3D1%3B.pdf`);
  const response = await download(baseUrl, `${path}?name=${encodeURIComponent('x\r\nSet-Cookie: a=b')}`);
  t.notOk(response.headers['set-cookie']);
  t.equal(response.status, 200);
  t.equal(await disposition(`?name=${encodeURIComponent('../../etc/passwd')}`), 'inline; filename=passwd', 'only the last path segment');
  t.equal(await disposition(`?name=${encodeURIComponent('100%.pdf')}`), `inline; filename=100_.pdf; filename*=UTF-8''100%25.pdf`);
  t.equal(await disposition('?name=%20'), `inline; filename="Resume 2026.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%202026.pdf`, 'a blank name is ignored');
  // The suggested name never changes the type: it comes from the stored name only.
  const renamed = await download(baseUrl, `${path}?name=page.html`);
  t.equal(renamed.headers['content-type'], 'application/pdf');
});

t.test('files of buckets that are not OpenToRead, unknown, expired and deleted files are 404', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const hidden = await publicBucket(service, owner.token, false);
  const open = await publicBucket(service, owner.token);
  const privateFile = await storeFile(service, hidden.bucketId, { name: 'secret.txt' });
  const expired = await storeFile(service, open.bucketId, { name: 'old.txt', expired: true });
  const deleted = await storeFile(service, open.bucketId, { name: 'gone.txt' });
  t.equal((await postForm(service.app, '/API/DeleteFile', { AccessToken: owner.token, FileKey: deleted.fileKey })).json().Code, 0);

  for (const path of [
    `/${hidden.name}/secret.txt`,
    `/Download/FromKey/${privateFile.fileKey}`,
    `/${open.name}/old.txt`,
    `/Download/FromKey/${expired.fileKey}`,
    `/${open.name}/gone.txt`,
    `/Download/FromKey/${deleted.fileKey}`,
    `/${open.name}/never.txt`,
    `/no-such-bucket/secret.txt`,
    `/Download/FromKey/999999999`,
  ]) {
    for (const method of ['GET', 'HEAD'] as const) {
      const response = await download(baseUrl, path, { method });
      t.equal(response.status, 404, `${method} ${path}`);
      t.match(response.headers['content-type'], /^application\/json/);
      if (method === 'GET') t.same(response.json, NOT_FOUND, path);
    }
  }

  // The flag is read at run time: opening the bucket serves its files at once.
  await postForm(service.app, '/API/EditBucket', { AccessToken: owner.token, BucketId: hidden.bucketId, NewBucketName: hidden.name, OpenToRead: true, OpenToUpload: false });
  t.equal((await download(baseUrl, `/${hidden.name}/secret.txt`)).status, 200);
});

t.test('path tricks never reach another file or the file system', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const open = await publicBucket(service, owner.token);
  const hidden = await publicBucket(service, owner.token, false);
  const target = await storeFile(service, open.bucketId, { name: 'a.txt' });
  const secret = await storeFile(service, hidden.bucketId, { name: 'b.txt' });
  const secretBytes = secret.content;
  const targetBytes = target.content;

  const paths = [
    `/${open.name}/..%2F${hidden.name}%2Fb.txt`,
    `/${open.name}/%2e%2e%2F${hidden.name}%2Fb.txt`,
    `/${open.name}/../${hidden.name}/b.txt`,
    `/${open.name}/..`,
    `/${open.name}/%2e%2e`,
    `/${open.name}/.`,
    `/${open.name}/a.txt%2F`,
    `/${open.name}/a.txt%2F..%2F..%2F..%2Fetc%2Fpasswd`,
    `/${open.name}%2Fa.txt`,
    `/${open.name}/a%2Ftxt`,
    `//${open.name}/a.txt`,
    `/${open.name}//a.txt`,
    `/${open.name}/a.txt/`,
    `/${open.name}/a.txt%00`,
    `/${open.name}/a.txt%00.png`,
    `/${open.name}%00/a.txt`,
    `/${open.name}/%00`,
    `/${open.name}/${'a'.repeat(300)}.txt`,
    `/${open.name}/${'a'.repeat(3000)}`,
    `/${'b'.repeat(30)}/a.txt`,
    `/${open.name}/${target.storageKey}`,
    `/objects/${secret.storageKey.slice(0, 2)}/${secret.storageKey}`,
    `/${secret.storageKey.slice(0, 2)}/${secret.storageKey}`,
    `/${open.name}/%E0%A4%A`,
    `/${open.name}/a.txt%`,
    `/${open.name}/a.txt%5C..%5Cb.txt`,
    `/Download/FromKey/..%2F..%2Fetc%2Fpasswd`,
    `/Download/FromKey/${secret.fileKey}%2F..`,
    `/Download/FromKey/${target.fileKey}%00.png`,
    `/Download/FromKey/-${target.fileKey}`,
    `/Download/FromKey/0`,
    `/Download/FromKey/1e3`,
    `/Download/FromKey/99999999999999999999`,
    `/Download/FromKey/${target.fileKey}/x`,
    `/Download/FromKey/`,
  ];
  for (const path of paths) {
    const response = await download(baseUrl, path);
    t.ok([400, 404].includes(response.status), `${path.slice(0, 60)} → ${response.status}`);
    t.match(response.headers['content-type'], /^application\/json/, 'the envelope');
    t.ok(response.json && [-1, -10].includes(response.json.Code as number), 'a refusal in the envelope');
    t.notOk(response.body.includes(secretBytes), 'never the bytes of the private file');
    t.notOk(response.body.includes(targetBytes), 'never another name for a file');
  }
  t.notOk(service.logs.some((line) => JSON.parse(line).level >= 50), 'no errors logged');
});

t.test("the service's own paths are never taken as a bucket name", async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  for (const path of ['/API/NoSuchOperation', '/api/x', '/Download/Nothing', '/Secret/Nothing', '/health/x', '/Admin/x', '/docs/x', '/metrics/x', '/favicon.ico/x']) {
    const response = await download(baseUrl, path);
    t.equal(response.status, 404, path);
    t.match(response.json?.Message, /^There is no GET operation at \//, `${path}: the unknown-route answer, not a download`);
  }
  t.equal((await download(baseUrl, '/health')).json?.Code, 0, 'static routes still answer');
  t.equal((await download(baseUrl, '/API/ViewOneFile?FileKey=999999999')).json?.Message, 'Could not find that file.');
  t.equal((await download(baseUrl, '/Secret/Generate')).json?.Code, -10);
});
