/**
 * Baseline: the bare render, sharp on its defaults behind node:http: GET /render?w=W&q=Q reads the
 * image file (IMAGE_FILE) and answers it decoded, turned upright, resized to W pixels wide (never
 * enlarged) and encoded as JPEG of quality Q, as the service does for `?w=W&q=Q`, without anything
 * else the service does (no lookup, no probe, no store, no queue).
 *
 * Run as a child process by the bench: prints {"port":N} once it listens.
 */
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import sharp from 'sharp';

const file = process.env.IMAGE_FILE;
if (!file) throw new Error('IMAGE_FILE is required');

const server = http.createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const width = Number(url.searchParams.get('w') ?? 256);
  const quality = Number(url.searchParams.get('q') ?? 80);
  readFile(file)
    .then((input) => sharp(input).rotate().resize({ width, withoutEnlargement: true }).jpeg({ quality }).toBuffer())
    .then(
      (bytes) => response.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': bytes.length }).end(bytes),
      (error: Error) => response.writeHead(500).end(error.message),
    );
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
