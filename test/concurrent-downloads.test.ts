import { createHash } from 'node:crypto';
import http from 'node:http';
import t from 'tap';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { abortDownload, download } from './helpers/download.js';
import { startService } from './helpers/service.js';
import { readBytes } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

const MiB = 1024 * 1024;

/** A GET read by a client that stops for `pauseMs` after every `every` bytes: the server's writes queue up behind it. */
function slowDownload(baseUrl: string, path: string, every: number, pauseMs: number, headers: Record<string, string> = {}): Promise<{ status: number; sha256: string; length: number }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({ hostname, port, path, headers, agent: false });
    request.on('error', reject);
    request.on('response', (response) => {
      const hash = createHash('sha256');
      let length = 0;
      let sincePause = 0;
      response.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        length += chunk.length;
        sincePause += chunk.length;
        if (sincePause >= every) {
          sincePause = 0;
          response.pause();
          setTimeout(() => response.resume(), pauseMs);
        }
      });
      response.on('error', reject);
      response.on('end', () => resolve({ status: response.statusCode ?? 0, sha256: hash.digest('hex'), length }));
    });
    request.end();
  });
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

t.test('downloads of different files at once, fast, slow, ranged and abandoned, each get their own bytes', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const name = uniqueBucketName('many');
  const bucketId = await createBucket(service, owner.token, { name, openToRead: true });

  // Sizes that end mid-chunk, so that short last reads meet full ones of the other files.
  const files = [];
  for (let i = 0; i < 4; i++) {
    const size = 5 * MiB + 1000 * i + 1;
    const fileName = `part-${i}.bin`;
    const uploaded = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName, size });
    t.equal(uploaded.body.Code, 0, `${fileName} stored`);
    const row = await service.app.db.selectFrom('files').select('storage_key').where('file_key', '=', uploaded.body.FileKey as number).executeTakeFirstOrThrow();
    const bytes = (await readBytes(service.app.storage, row.storage_key))!;
    files.push({ path: `/${name}/${fileName}`, sha256: uploaded.sha256, bytes });
  }
  // Crosses the boundaries of the 1 MiB reads on both ends.
  const range = { start: MiB - 7, end: 4 * MiB + 9 };

  for (let round = 0; round < 3; round++) {
    const results = await Promise.all(
      files.flatMap((file, i) => [
        download(baseUrl, file.path).then((r) => ({ i, kind: 'fast', status: r.status, sha256: r.sha256, expected: file.sha256 })),
        slowDownload(baseUrl, file.path, 512 * 1024, 15).then((r) => ({ i, kind: 'slow', status: r.status, sha256: r.sha256, expected: file.sha256 })),
        slowDownload(baseUrl, file.path, 256 * 1024, 10, { range: `bytes=${range.start}-${range.end}` }).then((r) => ({
          i,
          kind: 'ranged',
          status: r.status,
          sha256: r.sha256,
          expected: sha256(file.bytes.subarray(range.start, range.end + 1)),
        })),
        abortDownload(baseUrl, file.path, 2 * MiB).then((status) => ({ i, kind: 'abandoned', status, sha256: '', expected: '' })),
      ]),
    );
    for (const result of results) {
      t.equal(result.status, result.kind === 'ranged' ? 206 : 200, `round ${round}, file ${result.i}, ${result.kind}: status`);
      t.equal(result.sha256, result.expected, `round ${round}, file ${result.i}, ${result.kind}: the bytes of that file`);
    }
  }

  const after = await download(baseUrl, files[0]!.path);
  t.equal(after.sha256, files[0]!.sha256, 'a download after all of them is still exact');
});
