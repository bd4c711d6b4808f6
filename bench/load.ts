/**
 * Load generation: file content, multipart bodies, upload and download clients (undici, for
 * streaming bodies), closed-loop workers, and autocannon for small requests.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import autocannon from 'autocannon';
import { Client } from 'undici';

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;

const CHUNK = MiB;
/** One random block; every file is cut from it and stamped with its seed and chunk number. */
const BLOCK = randomBytes(CHUNK);

/**
 * The content of file `seed`: deterministic, so its sha256 can be computed again later without
 * keeping the file, and generated chunk by chunk so a GiB never sits in memory.
 */
export function* fileContent(seed: number, size: number): Generator<Buffer> {
  for (let offset = 0, index = 0; offset < size; offset += CHUNK, index++) {
    const length = Math.min(CHUNK, size - offset);
    const chunk = Buffer.allocUnsafe(length);
    BLOCK.copy(chunk, 0, 0, length);
    if (length >= 8) {
      chunk.writeUInt32LE(seed >>> 0, 0);
      chunk.writeUInt32LE(index, 4);
    }
    yield chunk;
  }
}

export function contentSha256(seed: number, size: number): string {
  const hash = createHash('sha256');
  for (const chunk of fileContent(seed, size)) hash.update(chunk);
  return hash.digest('hex');
}

let nextSeed = 1;
export const newSeed = (): number => nextSeed++;

/** A multipart/form-data body around one file part, with fields before and after the file. */
interface Form {
  contentType: string;
  head: Buffer;
  tail: Buffer;
  size: number;
  /** Total body length: head + file + tail. */
  length: number;
}

const BOUNDARY = '----bench-boundary-4c1f0b2e9d';

export function multipartForm(input: {
  before: Record<string, string | number>;
  after: Record<string, string | number>;
  fileName: string;
  size: number;
}): Form {
  const field = (name: string, value: string | number) =>
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(
    Object.entries(input.before).map(([k, v]) => field(k, v)).join('') +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="File"; filename="${input.fileName}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from('\r\n' + Object.entries(input.after).map(([k, v]) => field(k, v)).join('') + `--${BOUNDARY}--\r\n`);
  return {
    contentType: `multipart/form-data; boundary=${BOUNDARY}`,
    head,
    tail,
    size: input.size,
    length: head.length + input.size + tail.length,
  };
}

async function* formBody(form: Form, seed: number, sent: { at?: number }): AsyncGenerator<Buffer> {
  yield form.head;
  yield* fileContent(seed, form.size);
  yield form.tail;
  // Asked for more after the last chunk: the whole body has been handed to the connection.
  sent.at = performance.now();
}

export function newClient(origin: string): Client {
  // Generous timeouts: a 2 GiB upload is answered only after its fsync.
  return new Client(origin, { pipelining: 1, headersTimeout: 300_000, bodyTimeout: 300_000, keepAliveTimeout: 60_000 });
}

interface UploadReply {
  status: number;
  json: Record<string, unknown>;
  /** Streamed bodies: milliseconds from the last body byte handed to the socket to the answer. */
  afterLastByteMs?: number;
}

/** POSTs a multipart upload; small bodies go as one buffer, large ones streamed chunk by chunk. */
export async function postForm(client: Client, path: string, form: Form, seed: number): Promise<UploadReply> {
  const sent: { at?: number } = {};
  const body =
    form.size <= 4 * MiB
      ? Buffer.concat([form.head, ...fileContent(seed, form.size), form.tail])
      : Readable.from(formBody(form, seed, sent), { objectMode: false });
  const response = await client.request({
    path,
    method: 'POST',
    headers: { 'content-type': form.contentType, 'content-length': String(form.length) },
    body,
  });
  const answeredAt = performance.now();
  const text = await response.body.text();
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = { raw: text.slice(0, 200) };
  }
  return { status: response.statusCode, json, ...(sent.at !== undefined ? { afterLastByteMs: answeredAt - sent.at } : {}) };
}

interface DownloadReply {
  status: number;
  bytes: number;
  sha256?: string;
}

/** GETs a file and reads it to the end, counting (and optionally hashing) the bytes. */
export async function download(client: Client, path: string, options: { hash?: boolean } = {}): Promise<DownloadReply> {
  const response = await client.request({ path, method: 'GET' });
  const hash = options.hash ? createHash('sha256') : undefined;
  let bytes = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    hash?.update(chunk);
  }
  return { status: response.statusCode, bytes, sha256: hash?.digest('hex') };
}

/** Small form POST (application/x-www-form-urlencoded) or GET returning JSON. */
export async function callJson(
  origin: string,
  path: string,
  form?: Record<string, string | number | boolean>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(new URL(path, origin), {
    method: form ? 'POST' : 'GET',
    headers: form ? { 'content-type': 'application/x-www-form-urlencoded' } : {},
    body: form ? new URLSearchParams(Object.entries(form).map(([k, v]): [string, string] => [k, String(v)])).toString() : undefined,
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

interface LoopResult {
  /** Operations that completed successfully. */
  ops: number;
  /** Payload bytes moved by those operations (file bytes, not framing). */
  bytes: number;
  seconds: number;
  failures: number;
  firstFailure?: string;
}

/**
 * A closed loop: `concurrency` workers, each on its own connection, run `op` back to back until
 * the deadline; operations in flight at the deadline are finished and counted. `op` returns the
 * payload bytes it moved, or throws.
 */
export async function closedLoop(input: {
  origin: string;
  concurrency: number;
  durationMs: number;
  /** Stop early after this many operations in all (e.g. to bound disk use). */
  maxOps?: number;
  op: (client: Client, worker: number) => Promise<number>;
}): Promise<LoopResult> {
  const clients = Array.from({ length: input.concurrency }, () => newClient(input.origin));
  const result: LoopResult = { ops: 0, bytes: 0, seconds: 0, failures: 0 };
  const started = performance.now();
  const deadline = started + input.durationMs;
  let issued = 0;
  let lastDone = started;
  try {
    await Promise.all(
      clients.map(async (client, worker) => {
        while (performance.now() < deadline && (input.maxOps === undefined || issued < input.maxOps)) {
          issued++;
          try {
            const bytes = await input.op(client, worker);
            result.bytes += bytes;
            result.ops++;
          } catch (error) {
            result.failures++;
            result.firstFailure ??= error instanceof Error ? error.message : String(error);
            if (result.failures > 50) return;
          }
          lastDone = performance.now();
        }
      }),
    );
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
  }
  result.seconds = (lastDone - started) / 1000;
  return result;
}

interface CannonResult {
  ok: number;
  rps: number;
  seconds: number;
  non2xx: number;
  errors: number;
}

/**
 * autocannon against `paths`, for a duration or a fixed number of requests. Connection i always
 * asks for path i % paths.length (autocannon's list of URLs: its fast path; a `requests` sequence
 * builds every request anew and halves what it can send). A fixed amount lets every response be
 * counted, nothing cut off at a deadline, which the download-counter check needs.
 */
export async function cannon(input: {
  origin: string;
  paths: readonly string[];
  connections: number;
  durationSec?: number;
  amount?: number;
}): Promise<CannonResult> {
  const result = await autocannon({
    url: input.paths.map((path) => new URL(path, input.origin).href) as unknown as string,
    connections: input.connections,
    pipelining: 1,
    timeout: 30,
    // The end of a run is noticed at the next sample tick: 1 s by default, too coarse for short runs.
    sampleInt: 50,
    ...(input.amount !== undefined ? { amount: input.amount } : { duration: input.durationSec ?? 1 }),
  });
  const seconds = (new Date(result.finish).getTime() - new Date(result.start).getTime()) / 1000;
  const ok = result['2xx'];
  return { ok, rps: ok / seconds, seconds, non2xx: result.non2xx, errors: result.errors + result.timeouts };
}
