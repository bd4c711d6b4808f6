import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KyselyPlugin } from 'kysely';
import t from 'tap';
import { DownloadCounter } from '../src/services/download-counter.js';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { abortDownload, download } from './helpers/download.js';
import { startService, testDatabase, type TestService } from './helpers/service.js';
import { storeFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

async function storedCount(service: TestService, fileKey: number): Promise<number> {
  const row = await service.app.db.selectFrom('files').select('download_times').where('file_key', '=', fileKey).executeTakeFirstOrThrow();
  return row.download_times;
}

async function viewedCount(service: TestService, fileKey: number): Promise<number> {
  return (await service.app.inject({ url: `/API/ViewOneFile?FileKey=${fileKey}` })).json().File.DownloadTimes;
}

async function publicFile(service: TestService, name = 'counted.txt') {
  const owner = await service.newApp();
  const bucketName = uniqueBucketName('count');
  const bucketId = await createBucket(service, owner.token, { name: bucketName });
  const file = await storeFile(service, bucketId, { name });
  return { ...file, path: `/${bucketName}/${name}`, owner, bucketId };
}

t.test('the counter adds up in memory and writes every pending count in one flush', async (t) => {
  const service = await startService(t);
  const a = await publicFile(service, 'a.txt');
  const b = await publicFile(service, 'b.txt');
  const counter = new DownloadCounter(service.app.db);
  for (let i = 0; i < 3; i++) counter.record(a.fileKey);
  counter.record(b.fileKey);
  counter.record(987654321); // deleted meanwhile: its count has nowhere to go and is dropped
  t.equal(counter.pending(a.fileKey), 3);
  t.equal(await storedCount(service, a.fileKey), 0, 'nothing written on record');

  t.equal(await counter.flush(), 2, 'one statement updated both files');
  t.equal(counter.pending(a.fileKey), 0);
  t.equal(await storedCount(service, a.fileKey), 3);
  t.equal(await storedCount(service, b.fileKey), 1);
  t.equal(await counter.flush(), 0, 'nothing pending, nothing written');

  // A flush that fails keeps its counts for the next one, and they stay visible meanwhile.
  let failing = true;
  const flaky: KyselyPlugin = {
    transformQuery(args) {
      if (failing) throw new Error('database unreachable');
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  const flakyCounter = new DownloadCounter(service.app.db.withPlugin(flaky));
  flakyCounter.record(a.fileKey);
  flakyCounter.record(a.fileKey);
  await t.rejects(flakyCounter.flush(), /database unreachable/);
  t.equal(flakyCounter.pending(a.fileKey), 2, 'kept after the failure');
  flakyCounter.record(a.fileKey);
  failing = false;
  t.equal(await flakyCounter.flush(), 1);
  t.equal(await storedCount(service, a.fileKey), 6, 'nothing lost, nothing counted twice');
  t.equal(flakyCounter.pending(a.fileKey), 0);
});

t.test('only completed GET downloads count: not HEAD, 304, errors, or ranges after byte 0', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const file = await publicFile(service);
  const get = (headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') => download(baseUrl, file.path, { headers, method });

  const full = await get();
  t.equal(full.status, 200);
  t.equal((await get({}, 'HEAD')).status, 200);
  t.equal((await get({ 'if-none-match': full.headers.etag! })).status, 304);
  t.equal((await get({ range: 'bytes=0-4' })).status, 206);
  t.equal((await get({ range: 'bytes=0-' })).status, 206);
  t.equal((await get({ range: 'bytes=5-9' })).status, 206);
  t.equal((await get({ range: 'bytes=-5' })).status, 206);
  t.equal((await get({ range: 'bytes=999-' })).status, 416);
  t.equal((await get({ 'if-match': '"nope"' })).status, 412);
  t.equal((await download(baseUrl, `/Download/FromKey/${file.fileKey}`)).status, 200);

  t.equal(await viewedCount(service, file.fileKey), 4, 'the 200s and the two ranges from byte 0');
  await service.app.downloadCounter.flush();
  t.equal(await storedCount(service, file.fileKey), 4);
});

t.test('an aborted download does not count', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketName = uniqueBucketName('abort');
  const bucketId = await createBucket(service, owner.token, { name: bucketName });
  // Larger than what the socket buffers on both sides can hold, so the server is still writing.
  const uploaded = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'large.bin', size: 32 * 1024 * 1024 });
  const fileKey = uploaded.body.FileKey as number;

  t.equal(await abortDownload(baseUrl, `/${bucketName}/large.bin`, 1024 * 1024), 200);
  t.equal(await abortDownload(baseUrl, `/Download/FromKey/${fileKey}`, 64 * 1024), 200);
  await sleep(300);
  await service.app.downloadCounter.flush();
  t.equal(await viewedCount(service, fileKey), 0, 'neither aborted transfer counted');
  t.notOk(service.logs.some((line) => JSON.parse(line).level >= 50), 'a client going away is not an error');

  const complete = await download(baseUrl, `/${bucketName}/large.bin`);
  t.equal(complete.sha256, uploaded.sha256);
  t.equal(await viewedCount(service, fileKey), 1);
});

t.test('1000 concurrent downloads of one file count exactly 1000', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const file = await publicFile(service);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
  t.teardown(() => agent.destroy());
  const results = await Promise.all(Array.from({ length: 1000 }, () => download(baseUrl, file.path, { agent })));
  t.same(new Set(results.map((r) => r.status)), new Set([200]));
  t.ok(results.every((r) => r.body.length === 41));
  await service.app.downloadCounter.flush();
  t.equal(await storedCount(service, file.fileKey), 1000);
  t.equal(await viewedCount(service, file.fileKey), 1000, 'the view adds nothing more once flushed');
});

t.test('a download is seen at once on its instance, within the flush interval on another, and at shutdown', async (t) => {
  const database = await testDatabase();
  const first = await startService(t);
  const second = await startService(t, { database: await database.openAnother() });
  const baseUrl = await first.listen();
  const file = await publicFile(first);

  t.equal((await download(baseUrl, file.path)).status, 200);
  t.equal(await viewedCount(first, file.fileKey), 1, 'the same instance shows its own download before any flush');
  const list = (await first.app.inject({ url: `/API/ViewMultiFiles?Ids=${file.fileKey}` })).json();
  t.equal(list.Items[0].DownloadTimes, 1);
  const all = (await first.app.inject({ url: `/API/ViewAllFiles?AccessToken=${file.owner.token}&BucketId=${file.bucketId}` })).json();
  t.equal(all.AllFiles[0].DownloadTimes, 1);

  // The other instance learns of it from the database once the periodic flush ran.
  const started = Date.now();
  while ((await viewedCount(second, file.fileKey)) !== 1 && Date.now() - started < 5000) await sleep(50);
  t.equal(await viewedCount(second, file.fileKey), 1);
  t.ok(Date.now() - started < 2500, `seen after ${Date.now() - started} ms`);

  // Shutting down writes what is pending. Instances share one storage folder.
  const closing = await startService(t, { database: await database.openAnother(), env: { STORAGE_DIR: first.config.storageDir } });
  const closingUrl = await closing.listen();
  t.equal((await download(closingUrl, file.path)).status, 200);
  t.equal((await download(closingUrl, file.path)).status, 200);
  await closing.app.close();
  t.equal(await storedCount(first, file.fileKey), 3);
});
