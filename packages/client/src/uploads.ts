import type { ClientContext } from './context.js';
import { EXPIRED_TOKEN_MESSAGE, FileStoreError, invalidArguments, problems } from './errors.js';
import { OPERATIONS } from './operations.js';
import { checkParams } from './params.js';
import { openSource, type Body, type Opened, type UploadSource } from './sources.js';
import { envelope, send } from './transport.js';
import { resumableUpload, type ResumableOptions } from './tus.js';
import type { FileUploaded } from './types.js';
import { ProgressMeter, type OnProgress } from './upload-progress.js';

export interface UploadOptions extends ResumableOptions {
  /** Days the file is kept: 1 to 18250. */
  aliveDays: number;
  /** The file's name in the bucket; else the File's or the path's own name. */
  fileName?: string | undefined;
  /** The size of a stream, when known: then it can be uploaded resumably. */
  size?: number | undefined;
  /**
   * true: resumable (tus), which needs the size; false: one multipart request (UploadFile);
   * unset: resumable from the client's resumableThreshold on.
   */
  resumable?: boolean | undefined;
  onProgress?: OnProgress | undefined;
}

const BOUNDARY_PREFIX = '----filestore-sdk-';

/** A multipart/form-data body with the one file part, read as it is sent. */
function multipartBody(boundary: string, fileName: string, source: Opened, onFileBytes: (count: number) => void): { body: Body; headLength: number } {
  // As browsers do: the name raw in UTF-8, with quotes and line ends percent-encoded.
  const quoted = fileName.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  const head = new TextEncoder().encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="File"; filename="${quoted}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
  if (source.range && source.size !== undefined) {
    const file = source.range(0, source.size);
    if (file instanceof Uint8Array || (typeof Blob !== 'undefined' && file instanceof Blob)) {
      return { body: new Blob([head, file as never, tail] as never[]), headLength: head.byteLength };
    }
  }
  async function* parts(): AsyncIterable<Uint8Array> {
    yield head;
    const file = source.sequence ? source.sequence() : (source.range!(0, source.size!) as AsyncIterable<Uint8Array>);
    for await (const chunk of file) {
      yield chunk;
      onFileBytes(chunk.byteLength);
    }
    yield tail;
  }
  return { body: parts(), headLength: head.byteLength };
}

async function multipartUpload(ctx: ClientContext, source: Opened, target: { bucketId: number; aliveDays: number; fileName: string }, meter: ProgressMeter, signal?: AbortSignal): Promise<FileUploaded> {
  const url = new URL(OPERATIONS.UploadFile.path, ctx.transport.baseUrl);
  url.search = new URLSearchParams({ BucketId: String(target.bucketId), AliveDays: String(target.aliveDays) }).toString();
  const boundary = `${BOUNDARY_PREFIX}${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  for (let renewed = false; ; renewed = true) {
    const token = await ctx.tokens.get(signal);
    const headers = { Authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` };
    const perform = (to: URL, init: RequestInit) => {
      // Each attempt reads the file again from its start (a stream is never sent twice). Progress
      // counts the file's bytes, not the form around them: of a stream as it is read.
      meter.at(0);
      const { body, headLength } = multipartBody(boundary, target.fileName, source, (count) => source.size === undefined && meter.add(count));
      let read = 0;
      const onBytes = (count: number) => {
        read += count;
        if (source.size !== undefined) meter.at(Math.max(0, Math.min(source.size, read - headLength)));
      };
      return ctx.bodies.send(ctx.transport.fetch, to, init, body, onBytes);
    };
    const response = await send(ctx.transport, url, () => ({ method: 'POST', headers }), { signal, idempotent: false, replayable: source.range !== undefined, perform });
    try {
      const result = await envelope<FileUploaded>(response);
      meter.finish();
      return result;
    } catch (error) {
      const retry = !renewed && error instanceof FileStoreError && error.message === EXPIRED_TOKEN_MESSAGE && ctx.tokens.canRenew && source.range !== undefined;
      if (!retry) throw error;
      ctx.tokens.refused(token);
    }
  }
}

/** The last segment of a path, as the service would keep it. */
const baseName = (name: string) => name.split(/[\\/]/).pop() ?? name;

/** UploadFile, or a resumable upload (tus) for large files: one call, whichever it takes. */
export async function uploadFile(ctx: ClientContext, bucketId: number, source: UploadSource, options: UploadOptions): Promise<FileUploaded> {
  checkParams(OPERATIONS.UploadFile.params, { BucketId: bucketId, AliveDays: options.aliveDays });
  const opened = await openSource(source, ctx.openPath, options.size);
  try {
    const name = options.fileName ?? opened.name;
    if (name === undefined || baseName(name).trim() === '') throw invalidArguments([problems.required('fileName')]);
    const target = { bucketId, aliveDays: options.aliveDays, fileName: baseName(name) };
    const meter = new ProgressMeter(opened.size, options.onProgress);
    const resumable = options.resumable ?? (opened.size !== undefined && opened.size >= ctx.resumableThreshold);
    if (resumable) return await resumableUpload(ctx, opened, target, meter, options);
    return await multipartUpload(ctx, opened, target, meter, options.signal);
  } finally {
    await opened.close();
  }
}
