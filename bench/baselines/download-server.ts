/**
 * Baseline: the download limit of a bare node:http server on this machine. GET /<name> pipes
 * fs.createReadStream (1 MiB chunks) of BENCH_STATIC_DIR/<name> into the response, with its
 * Content-Length; nothing else (no range, no ETag, no database).
 *
 * Run as a child process by the bench: prints {"port":N} once it listens.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

const root = process.env.BENCH_STATIC_DIR;
if (!root) throw new Error('BENCH_STATIC_DIR is required');
const CHUNK = 1024 * 1024;

const server = http.createServer((request, response) => {
  const name = decodeURIComponent((request.url ?? '/').split('?')[0]!.slice(1));
  if (request.method !== 'GET' || name === '' || name.includes('/') || name.startsWith('.')) {
    response.writeHead(404).end();
    return;
  }
  const file = path.join(root, name);
  stat(file).then(
    async (stats) => {
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': stats.size });
      await pipeline(createReadStream(file, { highWaterMark: CHUNK }), response);
    },
    () => response.writeHead(404).end(),
  ).catch(() => response.destroy());
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
