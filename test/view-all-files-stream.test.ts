import http from 'node:http';
import { sql } from 'kysely';
import t from 'tap';
import { streamJsonObject } from '../src/http/json-stream.js';
import { LISTING_PAGE_SIZE } from '../src/services/files.js';
import { createBucket } from './helpers/buckets.js';
import { startService, type TestService } from './helpers/service.js';


/** Inserts `count` file rows in one statement (no bytes: listing never reads them); every `expiredEvery`-th is expired. */
async function fillBucket(service: TestService, bucketId: number, count: number, expiredEvery = 0): Promise<void> {
  await sql`
    INSERT INTO files (bucket_id, real_file_name, file_extension, size_bytes, download_times, upload_time, alive_days, expires_at, storage_key, sha256)
    SELECT ${bucketId}, 'name ' || i || ' é/?.txt', '.txt', i, i % 7, now() - interval '1 hour' * (i % 50), 1 + i % 3,
      CASE WHEN ${expiredEvery} > 0 AND i % ${expiredEvery} = 0 THEN now() - interval '1 second' ELSE now() + interval '1 day' END,
      'k' || ${bucketId} || 'x' || i, ''
    FROM generate_series(1, ${count}) AS i`.execute(service.app.db);
}

/** The body ViewAllFiles gave before it was streamed: one object, serialized at once. */
async function wholeBody(service: TestService, bucketId: number, baseUrl: string): Promise<string> {
  const rows = await service.app.db
    .selectFrom('files')
    .innerJoin('buckets', 'buckets.bucket_id', 'files.bucket_id')
    .selectAll('files')
    .select('buckets.name as bucket_name')
    .where('files.bucket_id', '=', bucketId)
    .where('files.expires_at', '>', sql<Date>`now()`)
    .orderBy('files.file_key')
    .execute();
  const AllFiles = rows.map((row) => ({
    FileKey: row.file_key,
    RealFileName: row.real_file_name,
    FileExtension: row.file_extension,
    JFileSize: row.size_bytes,
    DownloadTimes: row.download_times,
    BucketId: row.bucket_id,
    UploadTime: row.upload_time.toISOString(),
    AliveDays: row.alive_days,
    InternetPath: `${baseUrl}/${encodeURIComponent(row.bucket_name)}/${encodeURIComponent(row.real_file_name)}`,
  }));
  return JSON.stringify({ BucketId: bucketId, AllFiles, Message: 'Successfully get all files.', Code: 0 });
}

function get(url: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    }).on('error', reject);
  });
}

t.test('streamJsonObject writes exactly what JSON.stringify of the whole object would', async (t) => {
  const pages = async function* (sizes: number[]) {
    let n = 0;
    for (const size of sizes) yield Array.from({ length: size }, () => ({ n: ++n, text: 'q"\\\u2028' }));
  };
  const text = async (stream: AsyncIterable<Buffer | string>) => {
    let all = '';
    for await (const chunk of stream) all += chunk.toString();
    return all;
  };
  for (const sizes of [[], [0], [1], [3, 0, 2], [5, 5]]) {
    const items = [];
    for await (const page of pages(sizes)) items.push(...page);
    t.equal(await text(await streamJsonObject({ A: 1 }, 'L', pages(sizes), { M: 'x', Code: 0 })), JSON.stringify({ A: 1, L: items, M: 'x', Code: 0 }), `pages ${JSON.stringify(sizes)}`);
  }
  t.equal(await text(await streamJsonObject({}, 'L', pages([2]), {})), JSON.stringify({ L: [{ n: 1, text: 'q"\\\u2028' }, { n: 2, text: 'q"\\\u2028' }] }), 'nothing before or after');
  const failing = (async function* () {
    throw new Error('database gone');
  })();
  await t.rejects(streamJsonObject({}, 'L', failing, {}), { message: 'database gone' }, 'a failure before the first byte is thrown, so it is answered with the envelope');
});

t.test('ViewAllFiles streams the same bytes as the whole answer, across pages', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  for (const [count, expiredEvery] of [
    [0, 0],
    [LISTING_PAGE_SIZE, 0],
    [2 * LISTING_PAGE_SIZE + 17, 13],
  ] as const) {
    const bucketId = await createBucket(service, owner.token);
    await fillBucket(service, bucketId, count, expiredEvery);
    const response = await get(`${baseUrl}/API/ViewAllFiles?AccessToken=${owner.token}&BucketId=${bucketId}`);
    t.equal(response.status, 200);
    t.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    t.equal(response.headers['transfer-encoding'], 'chunked', 'sent as it is read, not measured first');
    const expected = await wholeBody(service, bucketId, baseUrl);
    t.ok(response.body === expected, `${count} files: byte-identical to the whole answer (${response.body.length} bytes)`);
    const parsed = JSON.parse(response.body);
    t.equal(parsed.AllFiles.length, count - (expiredEvery ? Math.floor(count / expiredEvery) : 0), 'expired files left out');
  }
});

t.test('a refusal is still the envelope, and a client that leaves mid-list does not disturb the service', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const stranger = await service.newApp();
  const bucketId = await createBucket(service, owner.token, { openToRead: false });
  await fillBucket(service, bucketId, 5 * LISTING_PAGE_SIZE);
  const refused = await get(`${baseUrl}/API/ViewAllFiles?AccessToken=${stranger.token}&BucketId=${bucketId}`);
  t.same(JSON.parse(refused.body), { Code: -1, Message: 'This is not your bucket!' });
  const unknown = await get(`${baseUrl}/API/ViewAllFiles?AccessToken=${owner.token}&BucketId=999999999`);
  t.same(JSON.parse(unknown.body), { Code: -1, Message: 'Could not find that bucket.' });

  // Read the first bytes, then go away.
  await new Promise<void>((resolve, reject) => {
    const request = http.get(`${baseUrl}/API/ViewAllFiles?AccessToken=${owner.token}&BucketId=${bucketId}`, (response) => {
      response.once('data', () => {
        request.destroy();
        resolve();
      });
    });
    request.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? resolve() : reject(error)));
  });
  const after = await get(`${baseUrl}/API/ViewAllFiles?AccessToken=${owner.token}&BucketId=${bucketId}`);
  t.equal(JSON.parse(after.body).AllFiles.length, 5 * LISTING_PAGE_SIZE, 'the next listing is whole');
});
