/**
 * resumable-large: one large file uploaded through tus 1.0.0 (/API/ResumableUpload, PATCHes of
 * 16 MiB on one keep-alive connection) against the multipart UploadFile of the same size, on the
 * same service in the same run; on disk and, when the S3 test server is configured, on S3.
 */
import { Readable } from 'node:stream';
import type { Client } from 'undici';
import { callJson, fileContent, MiB, newClient, newSeed } from '../load.js';
import { compare, measure, type Outcome, type Variant } from '../measure.js';
import { sizeLabel } from '../format.js';
import { prepareService, startService } from '../service.js';
import { Ledger, type Context, type ServiceRun } from './common.js';
import { dropBucket, s3Env, s3ServiceSetup } from './s3-direct.js';
import { uploadToService } from './uploads.js';

const TUS = { 'tus-resumable': '1.0.0' };

const b64 = (value: string | number) => Buffer.from(String(value)).toString('base64');

/** tus-js-client's chunkSize in this case; a multiple of the content generator's 1 MiB chunks. */
const PATCH_SIZE = 16 * MiB;

/**
 * The PATCH bodies, each streamed from the content generator while it is sent, as UploadFile's body
 * is: a client reading a file does not stop between two PATCHes to make the next one's bytes.
 */
function* patchBodies(seed: number, size: number): Generator<{ length: number; body: Readable }> {
  const content = fileContent(seed, size);
  for (let offset = 0; offset < size; offset += PATCH_SIZE) {
    const length = Math.min(PATCH_SIZE, size - offset);
    yield { length, body: Readable.from(take(content, length), { objectMode: false }) };
  }
}

function* take(content: Iterator<Buffer>, length: number): Generator<Buffer> {
  for (let left = length; left > 0; ) {
    const next = content.next();
    if (next.done) throw new Error('the content ended before the PATCH did');
    left -= next.value.length;
    yield next.value;
  }
}

/**
 * Creates the upload, sends it in PATCHes of 16 MiB, and checks the last answer names the stored
 * file; resolves with its FileKey and the seconds the last PATCH took (it also stores the file, like UploadFile).
 */
async function resumableUpload(client: Client, run: ServiceRun, size: number): Promise<{ fileKey: number; lastSeconds: number }> {
  const { instance } = run;
  const seed = newSeed();
  const created = await client.request({
    path: '/API/ResumableUpload',
    method: 'POST',
    headers: {
      ...TUS,
      authorization: `Bearer ${instance.token}`,
      'upload-length': String(size),
      'upload-metadata': `filename ${b64(`resumable-${seed}.bin`)},BucketId ${b64(instance.bucketId)},AliveDays ${b64(1)}`,
    },
  });
  await created.body.text();
  const location = created.headers.location;
  if (created.statusCode !== 201 || typeof location !== 'string') throw new Error(`ResumableUpload creation answered ${created.statusCode}`);
  const uploadPath = new URL(location).pathname;
  let offset = 0;
  let fileKey: string | undefined;
  let lastSeconds = 0;
  for (const { length, body } of patchBodies(seed, size)) {
    const sentAt = performance.now();
    const reply = await client.request({
      path: uploadPath,
      method: 'PATCH',
      headers: { ...TUS, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset), 'content-length': String(length) },
      body,
    });
    const text = await reply.body.text();
    if (reply.statusCode !== 204) throw new Error(`PATCH at ${offset} answered ${reply.statusCode}: ${text.slice(0, 200)}`);
    offset += length;
    if (Number(reply.headers['upload-offset']) !== offset) throw new Error(`PATCH answered Upload-Offset ${String(reply.headers['upload-offset'])}, expected ${offset}`);
    fileKey = reply.headers['upload-file-key'] as string | undefined;
    lastSeconds = (performance.now() - sentAt) / 1000;
  }
  if (!fileKey) throw new Error('the last PATCH named no Upload-File-Key');
  return { fileKey: Number(fileKey), lastSeconds };
}

/** Resumable against multipart on one service; `store` names where its bytes go. */
async function compareOn(ctx: Context, run: ServiceRun, store: string): Promise<void> {
  const { opts } = ctx;
  const db = run.instance.db;
  // Each run writes its GiB into page cache that the previous run's file, deleted just before,
  // has freed: on this machine such pages are written several times faster than fresh ones, and
  // with files kept the first runs of the rotation (A B B A A B) got the fast pages and the last
  // the slow ones, so one variant's median came from the fast runs and the other's from the slow.
  const written: number[] = [];
  const dropWritten = async (): Promise<void> => {
    for (const key of written.splice(0)) {
      const reply = await callJson(run.instance.origin, '/API/DeleteFile', { AccessToken: run.instance.token, FileKey: key });
      if (reply.json.Code !== 0) throw new Error(`DeleteFile ${key}: ${JSON.stringify(reply.json)}`);
      run.ledger.deleted.add(key);
    }
  };
  const timed = (send: (client: Client, size: number) => Promise<{ fileKey: number; lastSeconds?: number }>) => async (warmup: boolean): Promise<Outcome> => {
    const size = warmup ? opts.warmLargeSize : opts.largeSize;
    const client = newClient(run.instance.origin);
    const started = performance.now();
    let sent: { fileKey: number; lastSeconds?: number };
    try {
      sent = await send(client, size);
    } finally {
      await client.close();
    }
    const value = size / MiB / ((performance.now() - started) / 1000);
    written.push(sent.fileKey);
    return { value, secondary: sent.lastSeconds };
  };
  const tusName = `resumable (${db}, ${store})`;
  const formName = `UploadFile (${db}, ${store})`;
  const variants: Variant[] = [
    {
      name: tusName,
      pid: run.instance.child.pid,
      unit: 'MiB/s',
      secondaryUnit: 's for the last PATCH',
      dbPids: run.dbPids,
      prepare: dropWritten,
      run: timed((client, size) => resumableUpload(client, run, size)),
    },
    {
      name: formName,
      pid: run.instance.child.pid,
      unit: 'MiB/s',
      dbPids: run.dbPids,
      prepare: dropWritten,
      run: timed(async (client, size) => ({ fileKey: (await uploadToService(client, run, 'large', size)).key })),
    },
  ];
  const metrics = await measure(ctx, 'resumable-large', variants);
  await dropWritten();
  compare(ctx, {
    caseId: 'resumable-large',
    title: `Resumable upload ${sizeLabel(opts.largeSize)} in 16 MiB PATCHes vs UploadFile (${store})`,
    db,
    subject: metrics.get(tusName),
    baseline: metrics.get(formName),
    target: 0.8,
  });
}

export async function resumableLarge(ctx: Context): Promise<void> {
  for (const run of ctx.services) await compareOn(ctx, run, 'disk');
  const env = s3Env();
  if (!env) {
    ctx.skipped.push('resumable-large on S3: no S3 server (set S3_TEST_ENDPOINT and its keys: eval "$(scripts/s3-test-server.sh env)")');
    return;
  }
  const base = ctx.services[0]!;
  const { setup, bucket } = s3ServiceSetup(base, env);
  const started = await startService(setup);
  try {
    const instance = await prepareService(setup, started);
    await compareOn(ctx, { ...base, instance, setup, ledger: new Ledger(), floor: undefined }, 's3');
  } finally {
    await started.child.stop();
    await dropBucket(env, bucket);
  }
}
