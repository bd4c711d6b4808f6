import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { createBucket } from './helpers/buckets.js';
import { startService } from './helpers/service.js';

/**
 * CONTRACT section 13: a request the client aborts is the client's doing, never logged as a
 * database or server fault, never counted as a 5xx (anyone could fill the error log this way).
 */

/** Sends the head and part of a body over a raw socket, then cuts the connection. */
async function cutMidBody(baseUrl: string, head: string, partial: string): Promise<void> {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(head);
  socket.write(partial);
  await sleep(100);
  socket.destroy();
  await sleep(200);
}

interface LogLine {
  level: number;
  msg?: string;
  err?: { code?: string; message?: string };
}

t.test('form POSTs and uploads cut by the client are client aborts, logged at most at debug', async (t) => {
  const service = await startService(t, { env: { LOG_LEVEL: 'debug' } });
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const form = 'AccessToken=x&BucketName=abcdef&OpenToRead=true&OpenToUpload=true';
  const cuts: Array<[string, string, string]> = [
    ['a form POST without a token', `POST /API/CreateBucket HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n`, form.slice(0, 20)],
    ['a chunked form POST', `POST /API/DeleteFile HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n`, '5\r\nAcces'],
    [
      'an upload',
      `POST /API/UploadFile?AccessToken=${owner.token}&BucketId=${bucketId}&AliveDays=1 HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n`,
      '--b\r\nContent-Disposition: form-data; name="File"; filename="cut.bin"\r\n\r\n' + 'x'.repeat(5000),
    ],
  ];
  for (const [name, head, partial] of cuts) {
    const before = service.logs.length;
    for (let i = 0; i < 5; i++) await cutMidBody(baseUrl, head, partial);
    const lines = service.logs.slice(before).map((line) => JSON.parse(line) as LogLine);
    t.same(lines.filter((line) => line.level >= 30 && line.msg !== 'incoming request' && line.msg !== 'request completed'), [], `${name}: nothing logged above debug`);
    t.notOk(lines.some((line) => /database/i.test(JSON.stringify(line))), `${name}: nothing says database`);
  }
  const metrics = (await service.app.inject({ url: '/metrics' })).body;
  t.notMatch(metrics, /filestore_http_request_duration_seconds_count\{[^}]*status="5\d\d"/, 'no 5xx counted');
  t.match(metrics, /filestore_client_aborts_total\{route="CreateBucket",method="POST"\} 5/, 'counted as client aborts, CreateBucket');
  t.match(metrics, /filestore_client_aborts_total\{route="DeleteFile",method="POST"\} 5/, 'counted as client aborts, DeleteFile');
  t.match(metrics, /filestore_client_aborts_total\{route="UploadFile",method="POST"\} 5/, 'counted as client aborts, UploadFile');
  t.equal((await service.app.inject({ url: '/health' })).statusCode, 200);
});
