import { createHash, randomBytes } from 'node:crypto';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import t, { type Test } from 'tap';
import { Upload } from 'tus-js-client';
import { serverData, startServerProcess, type ServerProcess } from './helpers/process.js';
import { s3ServiceEnv, s3TestConfig, testBucketName, whyNoS3 } from './helpers/s3.js';
import { tusRequest } from './helpers/tus.js';
import { createS3Client } from '../src/storage/s3/client.js';

/**
 * A tus-js-client upload of 64 MiB cut by kill -9 of the service mid-PATCH, resumed against the
 * restarted service: every byte acknowledged before the kill is still there, and the file that
 * results is byte-identical.
 */
const APP = { id: 'resumable-crash-app', secret: 'resumable-crash-secret-0123456789' };
const MiB = 1024 * 1024;
/** Starting the server through the TypeScript loader is slow on a busy machine. */
const START_TIMEOUT_MS = 240_000;
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

// Two server starts and 64 MiB twice: more than the default file timeout on a busy machine.
t.setTimeout(2 * START_TIMEOUT_MS + 120_000);

async function postForm(url: string, fields: Record<string, string | number | boolean>) {
  const body = new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)]));
  return (await (await fetch(url, { method: 'POST', body })).json()) as Record<string, unknown>;
}

/** `s3Bucket`: the S3 bucket the service keeps its bytes in, if any. */
async function killAndResume(t: Test, storageEnv: Record<string, string>, s3Bucket?: string): Promise<void> {
  const data = await serverData(t, 'resumable-crash');
  const env = { ...data.env, ...storageEnv, BOOTSTRAP_APPS: `${APP.id}:${APP.secret}` };
  let server: ServerProcess = await startServerProcess(env, [], START_TIMEOUT_MS);
  t.teardown(() => server.stop('SIGKILL'));

  const token = (await postForm(`${server.baseUrl}/API/AccessToken`, { AppId: APP.id, AppSecret: APP.secret })).AccessToken as string;
  const bucket = await postForm(`${server.baseUrl}/API/CreateBucket`, { AccessToken: token, BucketName: 'crash-resume', OpenToRead: true, OpenToUpload: false });
  const content = randomBytes(64 * MiB);
  const options = {
    chunkSize: 4 * MiB,
    headers: { Authorization: `Bearer ${token}` },
    metadata: { filename: 'big.bin', BucketId: String(bucket.BucketId), AliveDays: '1' },
    retryDelays: [] as number[],
  };

  // First run: the service is killed once more than a third has been acknowledged.
  let acknowledged = 0;
  const firstRun = await new Promise<{ url: string | null; error: unknown }>((resolve) => {
    const upload: Upload = new Upload(content, {
      ...options,
      endpoint: `${server.baseUrl}/API/ResumableUpload`,
      onChunkComplete: (_chunk, accepted) => {
        acknowledged = accepted;
        if (accepted > 20 * MiB && server.child.exitCode === null) void server.stop('SIGKILL');
      },
      onError: (error) => resolve({ url: upload.url, error }),
      onSuccess: () => resolve({ url: upload.url, error: undefined }),
    });
    upload.start();
  });
  t.ok(firstRun.error, 'the kill cut the upload off');
  t.ok(acknowledged > 20 * MiB && acknowledged < content.length, `acknowledged ${acknowledged} bytes before the kill`);
  const uploadPath = new URL(firstRun.url!).pathname;
  if (s3Bucket) {
    const client = createS3Client(s3TestConfig(s3Bucket));
    const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: s3Bucket }));
    client.destroy();
    const id = uploadPath.split('/').pop()!;
    t.same((uploads.Uploads ?? []).map((u) => u.Key), [`${id.slice(0, 2)}/${id}`], 'the acknowledged bytes are in the bucket, at the key the file will have');
  }

  server = await startServerProcess(env, [], START_TIMEOUT_MS);
  const head = await tusRequest(`${server.baseUrl}${uploadPath}`, 'HEAD', {});
  t.equal(head.status, 200);
  t.ok(Number(head.headers['upload-offset']) >= acknowledged, `HEAD after the restart reports at least the acknowledged offset (${head.headers['upload-offset']})`);

  const fileKey = await new Promise<string>((resolve, reject) => {
    const upload = new Upload(content, {
      ...options,
      // A PATCH the kill cut off may hold the upload's lock until its lease runs out.
      retryDelays: [500, 1000, 2000, 4000, 8000],
      uploadUrl: `${server.baseUrl}${uploadPath}`,
      onError: reject,
      onAfterResponse: (_request, response) => {
        const key = response.getHeader('Upload-File-Key');
        if (key) resolve(key);
      },
    });
    upload.start();
  });
  const downloaded = Buffer.from(await (await fetch(`${server.baseUrl}/Download/FromKey/${fileKey}`)).arrayBuffer());
  t.equal(downloaded.length, content.length);
  t.equal(sha256(downloaded), sha256(content), 'byte-identical');
}

t.test('kill -9 mid-upload, restart, resume: nothing acknowledged is lost, the file is whole', (t) => killAndResume(t, {}));

t.test('the same with the bytes in S3, in parts of 5 MiB and tails between them', { skip: whyNoS3() }, (t) => {
  const bucket = testBucketName(t);
  return killAndResume(t, s3ServiceEnv(bucket, { S3_PART_SIZE_BYTES: String(5 * MiB) }), bucket);
});
