/**
 * Baseline: the least a relay from an S3 store does. GET /<key> sends GetObject for <key> of
 * BENCH_S3_BUCKET through the service's own S3 client (the same HTTP handler, timeouts and
 * checksum settings) and pipes the object's body into the response, with its Content-Length;
 * nothing else (no range, no ETag, no database, no counter).
 *
 * Run as a child process by the bench: prints {"port":N} once it listens.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import http from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createS3Client } from '../../src/storage/s3/client.js';

const { BENCH_S3_ENDPOINT, BENCH_S3_REGION, BENCH_S3_ACCESS_KEY_ID, BENCH_S3_SECRET_ACCESS_KEY, BENCH_S3_BUCKET } = process.env;
if (!BENCH_S3_ENDPOINT || !BENCH_S3_BUCKET) throw new Error('BENCH_S3_ENDPOINT and BENCH_S3_BUCKET are required');
const Bucket = BENCH_S3_BUCKET;
const s3 = createS3Client({
  endpoint: BENCH_S3_ENDPOINT,
  region: BENCH_S3_REGION ?? 'us-east-1',
  accessKeyId: BENCH_S3_ACCESS_KEY_ID,
  secretAccessKey: BENCH_S3_SECRET_ACCESS_KEY,
  forcePathStyle: true,
  bucket: Bucket,
  prefix: '',
  // Upload settings: this server only reads.
  partSizeBytes: 0,
  uploadConcurrency: 0,
  uploadMemoryBytes: 0,
});

const server = http.createServer((request, response) => {
  const Key = decodeURIComponent((request.url ?? '/').split('?')[0]!.slice(1));
  if (request.method !== 'GET' || Key === '') {
    response.writeHead(404).end();
    return;
  }
  s3.send(new GetObjectCommand({ Bucket, Key }))
    .then(async (object) => {
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': Number(object.ContentLength) });
      await pipeline(object.Body as Readable, response);
    })
    .catch(() => (response.headersSent ? response.destroy() : response.writeHead(404).end()));
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
