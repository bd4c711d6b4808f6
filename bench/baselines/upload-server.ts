/**
 * Baseline: the upload limit of a bare node:http server on this machine. It writes the raw request
 * body (the same multipart bytes the service receives, framing included, never parsed) to a file
 * and answers with the byte count. `?fsync=1` adds the durability steps the service takes for each
 * file: write to a temp name, fsync the file, rename it into place, fsync the folder.
 *
 * Run as a child process by the bench: prints {"port":N} once it listens.
 */
import http from 'node:http';
import { receiveFile } from './durable-file.js';

const dir = process.env.BENCH_UPLOAD_DIR;
if (!dir) throw new Error('BENCH_UPLOAD_DIR is required');
let sequence = 0;

const server = http.createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://localhost');
  if (request.method !== 'POST' || url.pathname !== '/upload') {
    response.writeHead(404).end();
    return;
  }
  const durable = url.searchParams.get('fsync') === '1';
  const name = `${process.pid}-${++sequence}`;
  receiveFile(request, dir, name, durable).then(
    (bytes) => {
      const body = JSON.stringify({ bytes, name });
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    },
    (error: Error) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end(String(error.message));
    },
  );
});
server.keepAliveTimeout = 72_000;
server.requestTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
