import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { onlyOnDisk } from './helpers/service.js';
import { metadata } from './helpers/tus.js';
import { startUploadService, storedPaths } from './helpers/uploaded-files.js';
import { curlPost, nodeClientWholeBody, pause, wholeBodyThenRead, type WholeBodyAnswer } from './helpers/whole-body-client.js';

/**
 * CONTRACT section 4: a body refused before it was read (over the limit by its Content-Length,
 * storage full, a refused token) still reaches every client as its answer, never as a reset; a
 * request that expects 100-continue is answered before its body is sent.
 */

const MiB = 1024 * 1024;
const TRIES = 20;
const BODY_BYTES = 6 * MiB;
const BOUNDARY = 'refused-body-boundary';
const INVALID = 'Your input contains several errors!';

const fileHead = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="File"; filename="refused.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
const fileTail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
const multipartType = `multipart/form-data; boundary=${BOUNDARY}`;

interface Refusal {
  path: string;
  headers: Record<string, string>;
  head?: Buffer;
  tail?: Buffer;
  status: number;
  envelope: Record<string, unknown>;
}

/** Every kind of client, TRIES times each: each try reads the refusal, whole. */
async function everyClientReads(t: Test, baseUrl: string, refusal: Refusal): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'refused-bodies-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const keepAlive = new http.Agent({ keepAlive: true });
  t.teardown(() => keepAlive.destroy());
  const body = { head: refusal.head, tail: refusal.tail, bodyBytes: BODY_BYTES };
  const clients: Array<[string, () => Promise<WholeBodyAnswer>]> = [
    ['a raw socket, keep-alive', () => wholeBodyThenRead(baseUrl, { method: 'POST', path: refusal.path, headers: refusal.headers, ...body, connection: 'keep-alive' })],
    ['a raw socket, Connection: close', () => wholeBodyThenRead(baseUrl, { method: 'POST', path: refusal.path, headers: refusal.headers, ...body, connection: 'close' })],
    ["Node's http client, keep-alive agent", () => nodeClientWholeBody(baseUrl, { path: refusal.path, headers: refusal.headers, ...body, agent: keepAlive })],
    ["Node's http client, no agent", () => nodeClientWholeBody(baseUrl, { path: refusal.path, headers: refusal.headers, ...body, agent: false })],
    ['curl', () => curlPost(baseUrl, { path: refusal.path, headers: refusal.headers, ...body, dir, expect: false })],
    ['curl with Expect: 100-continue', () => curlPost(baseUrl, { path: refusal.path, headers: refusal.headers, ...body, dir, expect: true })],
  ];
  for (const [client, send] of clients) {
    const seen: string[] = [];
    for (let i = 0; i < TRIES; i++) {
      const answer = await send();
      const matches = answer.error === undefined && answer.status === refusal.status && JSON.stringify(answer.body) === JSON.stringify(refusal.envelope);
      if (!matches) seen.push(`try ${i + 1}: ${answer.error ?? `${answer.status} ${JSON.stringify(answer.body)}`}`);
      await pause();
    }
    t.same(seen, [], `${client}: all ${TRIES} tries read ${refusal.status} with the envelope`);
  }
}

t.test('UploadFile over MAX_UPLOAD_BYTES by its Content-Length', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t, { MAX_UPLOAD_BYTES: String(MiB) });
  await everyClientReads(t, baseUrl, {
    path: `/API/UploadFile?AccessToken=${owner.token}&BucketId=${bucketId}&AliveDays=1`,
    headers: { 'Content-Type': multipartType },
    head: fileHead,
    tail: fileTail,
    status: 413,
    envelope: { Code: -10, Message: INVALID, Items: [`The file is larger than the limit of ${MiB} bytes.`] },
  });
  t.same(await storedPaths(service), [], 'nothing was stored');
});

t.test('UploadFile with a bad token in the query', async (t) => {
  const { service, baseUrl, bucketId } = await startUploadService(t);
  await everyClientReads(t, baseUrl, {
    path: `/API/UploadFile?AccessToken=not-a-token&BucketId=${bucketId}&AliveDays=1`,
    headers: { 'Content-Type': multipartType },
    head: fileHead,
    tail: fileTail,
    status: 200,
    envelope: { Code: -1, Message: 'Invalid or expired AccessToken.' },
  });
  t.same(await storedPaths(service), [], 'nothing was stored');
});

t.test('UploadFile while the storage is full', { skip: onlyOnDisk('a full disk is a free-space floor of the disk store') }, async (t) => {
  const { baseUrl, owner, bucketId } = await startUploadService(t, { MIN_FREE_DISK_BYTES: String(Number.MAX_SAFE_INTEGER) });
  await everyClientReads(t, baseUrl, {
    path: `/API/UploadFile?AccessToken=${owner.token}&BucketId=${bucketId}&AliveDays=1`,
    headers: { 'Content-Type': multipartType },
    head: fileHead,
    tail: fileTail,
    status: 507,
    envelope: { Code: -1, Message: 'The storage is full; the file was not stored.' },
  });
});

t.test('a resumable creation with its first bytes, refused', async (t) => {
  const { service, baseUrl, owner, bucketId } = await startUploadService(t, { MAX_UPLOAD_BYTES: String(MiB) });
  const tus = (token: string, length: number) => ({
    'Tus-Resumable': '1.0.0',
    'Content-Type': 'application/offset+octet-stream',
    Authorization: `Bearer ${token}`,
    'Upload-Length': String(length),
    'Upload-Metadata': metadata({ filename: 'refused.bin', BucketId: String(bucketId), AliveDays: '1' }),
  });
  await t.test('too large', (t) =>
    everyClientReads(t, baseUrl, {
      path: '/API/ResumableUpload',
      headers: tus(owner.token, BODY_BYTES),
      status: 413,
      envelope: { Code: -10, Message: INVALID, Items: [`The file is larger than the limit of ${MiB} bytes.`] },
    }),
  );
  await t.test('a bad token', (t) =>
    everyClientReads(t, baseUrl, {
      path: '/API/ResumableUpload',
      headers: tus('not-a-token', MiB),
      status: 403,
      envelope: { Code: -1, Message: 'Invalid or expired AccessToken.' },
    }),
  );
  t.same(await storedPaths(service), [], 'nothing was stored');
});

t.test('Expect: 100-continue is answered before the body is sent', async (t) => {
  const { baseUrl, owner, bucketId } = await startUploadService(t, { MAX_UPLOAD_BYTES: String(MiB) });
  const { hostname, port } = new URL(baseUrl);
  const ask = (query: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = http.request({ host: hostname, port, method: 'POST', path: `/API/UploadFile?${query}`, headers: { 'Content-Type': multipartType, 'Content-Length': String(4 * MiB), Expect: '100-continue' } });
      const timer = setTimeout(() => reject(new Error('no answer before the body')), 5000);
      socket.on('continue', () => {
        clearTimeout(timer);
        socket.destroy();
        resolve('100 Continue');
      });
      socket.on('response', (response) => {
        clearTimeout(timer);
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve(`${response.statusCode} ${Buffer.concat(chunks).toString()}`));
      });
      socket.on('error', () => {});
      socket.flushHeaders();
    });
  t.equal(
    await ask(`AccessToken=${owner.token}&BucketId=${bucketId}&AliveDays=1`),
    `413 ${JSON.stringify({ Code: -10, Message: INVALID, Items: [`The file is larger than the limit of ${MiB} bytes.`] })}`,
    'too large: the refusal, and no 100',
  );
  const small = await new Promise<string>((resolve, reject) => {
    setTimeout(() => reject(new Error('no answer before the body')), 5000).unref();
    const request = http.request({ host: hostname, port, method: 'POST', path: `/API/UploadFile?AccessToken=not-a-token&BucketId=${bucketId}&AliveDays=1`, headers: { 'Content-Type': multipartType, 'Content-Length': String(1000), Expect: '100-continue' } });
    request.on('continue', () => resolve('100 Continue'));
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve(`${response.statusCode} ${Buffer.concat(chunks).toString()}`));
    });
    request.on('error', reject);
    request.flushHeaders();
  });
  t.equal(small, `200 ${JSON.stringify({ Code: -1, Message: 'Invalid or expired AccessToken.' })}`, 'a bad token in the query: the refusal, and no 100');
  const accepted = await new Promise<string>((resolve, reject) => {
    setTimeout(() => reject(new Error('no 100 Continue and no answer')), 5000).unref();
    const request = http.request({ host: hostname, port, method: 'POST', path: `/API/UploadFile?AccessToken=${owner.token}&BucketId=${bucketId}&AliveDays=1`, headers: { 'Content-Type': multipartType, 'Content-Length': String(fileHead.length + 10 + fileTail.length), Expect: '100-continue' } });
    let continued = false;
    request.on('continue', () => {
      continued = true;
      request.end(Buffer.concat([fileHead, Buffer.from('0123456789'), fileTail]));
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve(`${continued ? '100 then ' : ''}${response.statusCode} ${JSON.parse(Buffer.concat(chunks).toString()).Code}`));
    });
    request.on('error', reject);
    request.flushHeaders();
  });
  t.equal(accepted, '100 then 200 0', 'an upload that may go on gets 100 Continue, then its answer');
});
