import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { createBucket } from './helpers/buckets.js';
import { OCTETS } from './helpers/resumable.js';
import { metadata, tusRequest } from './helpers/tus.js';
import { upload } from './helpers/upload.js';
import { startUploadService } from './helpers/uploaded-files.js';

/**
 * CONTRACT section 18: uploads are heavy work admitted per app. An app's uploads past its turns
 * (PER_APP_UPLOADS) and queue wait or get 429 with Retry-After; another app's go on.
 */

const MiB = 1024 * 1024;

t.test("an app's uploads past its turns are refused with Retry-After; another app's go on", async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t, { PER_APP_UPLOADS: '1', PER_APP_QUEUE: '0' });
  const other = await service.newApp();
  const otherBucket = await createBucket(service, other.token);
  const query = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
  // One upload of the owner holds its turn: it sends part of its body, then waits.
  const { hostname, port } = new URL(baseUrl);
  const holding = net.connect(Number(port), hostname);
  holding.on('error', () => {});
  t.teardown(() => holding.destroy());
  holding.write(
    `POST /API/UploadFile?AccessToken=${owner.token}&BucketId=${bucketId}&AliveDays=1 HTTP/1.1\r\nHost: x\r\n` +
      `Content-Type: multipart/form-data; boundary=b\r\nContent-Length: ${4 * MiB}\r\n\r\n` +
      `--b\r\nContent-Disposition: form-data; name="File"; filename="holding.bin"\r\n\r\n`,
  );
  holding.write(randomBytes(MiB));
  await sleep(300);

  const refused = await upload({ baseUrl, query, fileName: 'second.bin', size: 2 * MiB });
  t.equal(refused.status, 429);
  t.match(refused.body, { Code: -1, Message: /too many requests in progress/ });
  const resumable = await tusRequest(`${baseUrl}/API/ResumableUpload`, 'POST', {
    Authorization: `Bearer ${owner.token}`,
    'Upload-Length': 10,
    'Upload-Metadata': metadata({ filename: 'r.bin', BucketId: String(bucketId), AliveDays: '1' }),
    'Content-Type': OCTETS,
  }, randomBytes(10));
  t.equal(resumable.status, 429, 'a resumable upload with its bytes waits for the same turns');
  t.ok(resumable.headers['retry-after'], 'with Retry-After');

  const others = await upload({ baseUrl, query: { AccessToken: other.token, BucketId: otherBucket, AliveDays: 1 }, fileName: 'other.bin', size: 2 * MiB });
  t.equal(others.body.Code, 0, "another app's upload is not held up");
  const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
  t.match(metrics, /filestore_admission_total\{work="uploads",outcome="refused"\} 2/);
  holding.destroy();
});
