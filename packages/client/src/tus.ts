import type { CallOptions, ClientContext } from './context.js';
import { EXPIRED_TOKEN_MESSAGE, FileStoreError } from './errors.js';
import { RESUMABLE } from './operations.js';
import { pieces, type Body, type Opened } from './sources.js';
import { backoff, errorOf, readEnvelope, requestSignal, send, sleep, unreachable } from './transport.js';
import type { FileUploaded } from './types.js';
import type { ProgressMeter } from './upload-progress.js';

/**
 * A resumable upload (tus 1.0.0, core with creation and termination): created with the token,
 * then PATCHed chunk by chunk at the upload URL, which is its capability. A failed PATCH (network,
 * 5xx, 423, a 409 on the offset) asks with HEAD where the service is and goes on from there.
 */

const TUS = { 'Tus-Resumable': '1.0.0' };
const UPLOADED = 'Successfully uploaded your file.';

export interface ResumableTarget {
  bucketId: number;
  aliveDays: number;
  fileName: string;
}

export interface ResumableOptions extends CallOptions {
  /** The URL of an upload begun earlier (see onUploadUrl): it goes on from the service's offset. */
  resumeFrom?: string | undefined;
  /** Called with the upload URL once it exists, to resume it after this process or page is gone. */
  onUploadUrl?: ((url: string) => void) | undefined;
}

/** Base64 of UTF-8 text, for Upload-Metadata. */
function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

const metadata = (target: ResumableTarget) =>
  [`filename ${base64(target.fileName)}`, `BucketId ${base64(String(target.bucketId))}`, `AliveDays ${base64(String(target.aliveDays))}`].join(',');

/** The file that the answer completing an upload names. */
function completed(response: Response): FileUploaded | undefined {
  const key = response.headers.get('upload-file-key');
  if (key === null) return undefined;
  return { FileKey: Number(key), Path: response.headers.get('upload-file-path') ?? '', Code: 0, Message: UPLOADED };
}

async function refusal(response: Response): Promise<FileStoreError> {
  return errorOf(response, await readEnvelope(response));
}

/** HEAD: the offset the service holds, or undefined when it no longer knows the upload. */
export async function uploadOffset(ctx: ClientContext, url: string, options: CallOptions = {}): Promise<{ offset: number; length: number | undefined } | undefined> {
  const response = await send(ctx.transport, new URL(url), () => ({ method: 'HEAD', headers: TUS }), { signal: options.signal, idempotent: true });
  if (response.status === 404 || response.status === 410) return undefined;
  if (!response.ok) throw errorOf(response, undefined);
  const length = response.headers.get('upload-length');
  return { offset: Number(response.headers.get('upload-offset') ?? 0), length: length === null ? undefined : Number(length) };
}

/** DELETE: gives the upload up; its bytes go at once. */
export async function terminateUpload(ctx: ClientContext, url: string, options: CallOptions = {}): Promise<void> {
  const response = await send(ctx.transport, new URL(url), () => ({ method: 'DELETE', headers: TUS }), { signal: options.signal, idempotent: true });
  if (response.status !== 204 && response.status !== 404 && response.status !== 410) throw await refusal(response);
  await response.body?.cancel();
}

async function create(ctx: ClientContext, size: number, target: ResumableTarget, signal?: AbortSignal): Promise<Response> {
  const url = new URL(RESUMABLE.path, ctx.transport.baseUrl);
  for (let renewed = false; ; renewed = true) {
    const token = await ctx.tokens.get(signal);
    const headers = { ...TUS, Authorization: `Bearer ${token}`, 'Upload-Length': String(size), 'Upload-Metadata': metadata(target) };
    const response = await send(ctx.transport, url, () => ({ method: 'POST', headers }), { signal, idempotent: false });
    if (response.status === 201) return response;
    const error = await refusal(response);
    if (renewed || error.message !== EXPIRED_TOKEN_MESSAGE || !ctx.tokens.canRenew) throw error;
    ctx.tokens.refused(token);
  }
}

/** Where a failed PATCH leaves the upload: the service's offset, or the error when it is gone. */
async function recover(ctx: ClientContext, url: string, failure: FileStoreError, signal?: AbortSignal): Promise<number> {
  const state = await uploadOffset(ctx, url, { signal });
  // Gone: it expired, was terminated, or its last PATCH was refused (the name was taken meanwhile).
  if (!state) throw failure;
  return state.offset;
}

/** A PATCH failure worth another try once the offset is known again. */
const transient = (status: number) => status === 0 || status === 409 || status === 423 || status === 429 || status >= 500;

export async function resumableUpload(
  ctx: ClientContext,
  source: Opened,
  target: ResumableTarget,
  meter: ProgressMeter,
  options: ResumableOptions,
): Promise<FileUploaded> {
  const { signal } = options;
  const size = source.size;
  if (size === undefined) throw new FileStoreError('A resumable upload needs the size of the file.', { code: -1 });

  let url: string | undefined;
  let offset = 0;
  if (options.resumeFrom) {
    const state = await uploadOffset(ctx, options.resumeFrom, { signal });
    if (state && state.length === size) {
      url = options.resumeFrom;
      offset = state.offset;
    }
  }
  if (!url) {
    const created = await create(ctx, size, target, signal);
    const done = completed(created);
    const location = created.headers.get('location');
    await created.body?.cancel();
    if (done) return done;
    if (!location) throw new FileStoreError('The service created the upload without a Location.', { code: -1, status: 201 });
    url = new URL(location, ctx.transport.baseUrl).href;
    options.onUploadUrl?.(url);
  }
  meter.at(offset);

  // A stream is read once, in chunks kept until the service acknowledged them.
  const sequence = source.sequence ? pieces(source.sequence(), ctx.chunkSize)[Symbol.asyncIterator]() : undefined;
  let held: { start: number; bytes: Uint8Array } | undefined;
  const chunk = async (start: number): Promise<Body> => {
    if (source.range) return source.range(start, Math.min(size, start + ctx.chunkSize));
    while (!held || start >= held.start + held.bytes.byteLength) {
      const next = await sequence!.next();
      if (next.done) throw new FileStoreError('The stream ended before the size it was given.', { code: -1 });
      held = { start: held ? held.start + held.bytes.byteLength : 0, bytes: next.value };
    }
    if (start < held.start) throw new FileStoreError('The service lost bytes of a stream that cannot be read again.', { code: -1 });
    return held.bytes.subarray(start - held.start);
  };

  let failures = 0;
  for (;;) {
    const body = await chunk(offset);
    let response: Response;
    try {
      const headers = { ...TUS, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' };
      const patchSignal = requestSignal(signal);
      response = await ctx.bodies.send(ctx.transport.fetch, url, { method: 'PATCH', headers, ...(patchSignal ? { signal: patchSignal } : {}) }, body, (count) => meter.add(count));
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      response = new Response(null, { status: 599 });
      if (failures >= ctx.transport.retry.retries) throw unreachable(url, error);
    }
    if (response.status === 204) {
      const done = completed(response);
      if (done) {
        meter.finish();
        return done;
      }
      const next = Number(response.headers.get('upload-offset'));
      if (next > offset) failures = 0;
      offset = next;
      meter.at(offset);
      if (offset >= size) throw new FileStoreError('The service holds every byte but did not complete the file.', { code: -1, status: 204 });
      continue;
    }
    const failure = response.status === 599 ? unreachable(url, 'the connection was lost') : await refusal(response);
    if (!transient(failure.status) || failures >= ctx.transport.retry.retries) throw failure;
    failures++;
    if (failure.status !== 409) await sleep(failure.retryAfter !== undefined ? failure.retryAfter * 1000 : backoff(ctx.transport.retry, failures - 1), signal);
    const before = offset;
    offset = await recover(ctx, url, failure, signal);
    // A 409 that moved nothing is not about the offset: the name was taken meanwhile.
    if (failure.status === 409 && offset === before) throw failure;
    meter.at(offset);
  }
}
