import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { createBucket } from './helpers/buckets.js';
import { startService } from './helpers/service.js';
import { incompleteWrites } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

const MiB = 1024 * 1024;

/** Connects a raw socket and collects what the server sends until it closes the connection. */
function rawClient(baseUrl: string) {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) => {
    const start = Date.now();
    socket.on('close', () => resolve(Date.now() - start));
  });
  return { socket, closed, received: () => received };
}

t.test('a client that sends its headers too slowly is answered 408 and disconnected', async (t) => {
  const service = await startService(t, { env: { HEADERS_TIMEOUT_SECONDS: '1' } });
  const baseUrl = await service.listen();

  const slow = rawClient(baseUrl);
  slow.socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n');
  // One header line every 200 ms: always active, never done.
  const drip = setInterval(() => slow.socket.writable && slow.socket.write('X-Slow: 1\r\n'), 200);
  t.teardown(() => clearInterval(drip));
  const elapsed = await slow.closed;
  clearInterval(drip);
  t.ok(elapsed >= 900 && elapsed < 5000, `closed after ${elapsed} ms`);
  t.match(slow.received(), /^HTTP\/1\.1 408 Request Timeout\r\n/);
  t.match(slow.received(), /"Code":-10/);
  t.match(slow.received(), /"Items":\["The request headers did not arrive in time\."\]/);

  // An idle keep-alive connection is not a slow request: it outlives the headers timeout.
  const idle = rawClient(baseUrl);
  idle.socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n');
  await sleep(1800);
  idle.socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  await idle.closed;
  t.equal(idle.received().match(/HTTP\/1\.1 200 OK/g)?.length, 2, 'both requests answered on one connection');
});

t.test('a stalled upload is dropped after the idle timeout and leaves nothing; a slow one that keeps moving is not', async (t) => {
  const service = await startService(t, { env: { IDLE_TIMEOUT_SECONDS: '1' } });
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const params = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };

  const started = Date.now();
  await t.rejects(upload({ baseUrl, query: params, fileName: 'stalled.bin', size: 8 * MiB, stallAfterBytes: 2 * MiB }));
  t.ok(Date.now() - started < 10_000, 'the connection was closed by the server');
  for (let i = 0; i < 50 && (await incompleteWrites(service.app.storage)).length > 0; i++) await sleep(100);
  t.same(await incompleteWrites(service.app.storage), [], 'the temp file is removed');
  t.same(await service.app.db.selectFrom('files').selectAll().where('bucket_id', '=', bucketId).execute(), [], 'no row');

  // Eight 256 KiB chunks 400 ms apart: longer than the idle timeout in total, never idle that long.
  const slow = await upload({ baseUrl, query: params, fileName: 'slow.bin', size: 2 * MiB, chunkDelayMs: 400 });
  t.equal(slow.body.Code, 0, JSON.stringify(slow.body));
});
