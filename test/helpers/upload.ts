import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';

export interface UploadSpec {
  /** Base URL of a listening service, e.g. http://127.0.0.1:1234 */
  baseUrl: string;
  query?: Record<string, string | number>;
  before?: Record<string, string | number>;
  after?: Record<string, string | number>;
  fileName?: string;
  /** Name of the file part; clients send File or file. */
  fieldName?: string;
  size: number;
  /** Number of file parts (for the refusal of zero or several). */
  fileParts?: number;
  /** Destroy the connection once this many body bytes were sent. */
  abortAfterBytes?: number;
  /** Stop sending, without closing, once this many body bytes were sent: a client that stalls. */
  stallAfterBytes?: number;
  /** Pause between chunks, to keep an upload in flight for a while. */
  chunkDelayMs?: number;
  /** Send the body's Content-Length, as most clients do, instead of chunked encoding. */
  withLength?: boolean;
}

export interface UploadResult {
  status: number;
  body: Record<string, unknown>;
  /** sha256 (hex) of the file content sent. */
  sha256: string;
}

const CHUNK = 256 * 1024;
const BOUNDARY = '----filestore-test-boundary-7d93b1';

function fieldPart(name: string, value: string | number): Buffer {
  return Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
}

function fileHeader(fieldName: string, fileName: string): Buffer {
  const quoted = fileName.replace(/"/g, '%22');
  return Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${fieldName}"; filename="${quoted}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
}

/** Random content generated chunk by chunk: a multi-megabyte file never sits in memory whole. */
function* content(size: number, hash: ReturnType<typeof createHash>): Generator<Buffer> {
  let left = size;
  const block = randomBytes(Math.min(CHUNK, Math.max(size, 1)));
  let round = 0;
  while (left > 0) {
    const chunk = Buffer.from(block.subarray(0, Math.min(CHUNK, left)));
    // Number each chunk so that no two chunks of the file are alike.
    if (chunk.length >= 4) chunk.writeUInt32LE(round++ >>> 0, 0);
    hash.update(chunk);
    left -= chunk.length;
    yield chunk;
  }
}

/** Sends a multipart upload over a real socket, streaming the file part. */
export function upload(spec: UploadSpec): Promise<UploadResult> {
  const url = new URL('/API/UploadFile', spec.baseUrl);
  for (const [k, v] of Object.entries(spec.query ?? {})) url.searchParams.set(k, String(v));
  const hash = createHash('sha256');
  const parts: Array<Buffer | (() => Generator<Buffer>)> = [];
  for (const [k, v] of Object.entries(spec.before ?? {})) parts.push(fieldPart(k, v));
  for (let i = 0; i < (spec.fileParts ?? 1); i++) {
    parts.push(fileHeader(spec.fieldName ?? 'File', spec.fileName ?? 'file.bin'));
    parts.push(() => content(spec.size, hash));
    parts.push(Buffer.from('\r\n'));
  }
  for (const [k, v] of Object.entries(spec.after ?? {})) parts.push(fieldPart(k, v));
  parts.push(Buffer.from(`--${BOUNDARY}--\r\n`));

  const length = parts.reduce((sum, part) => sum + (typeof part === 'function' ? spec.size : part.length), 0);
  return new Promise((resolve, reject) => {
    const request = http.request(url, {
      method: 'POST',
      headers: {
        'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
        ...(spec.withLength ? { 'content-length': String(length) } : { 'transfer-encoding': 'chunked' }),
      },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      response.on('error', reject);
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        try {
          resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()), sha256: hash.digest('hex') });
        } catch (error) {
          reject(error);
        }
      });
    });

    let sent = 0;
    const write = async () => {
      for (const part of parts) {
        const chunks = typeof part === 'function' ? part() : [part];
        for (const chunk of chunks) {
          if (spec.abortAfterBytes !== undefined && sent + chunk.length > spec.abortAfterBytes) {
            request.destroy(new Error('client aborted the upload'));
            return;
          }
          if (spec.stallAfterBytes !== undefined && sent + chunk.length > spec.stallAfterBytes) return;
          sent += chunk.length;
          if (!request.write(chunk)) await new Promise((r) => request.once('drain', r));
          if (request.destroyed) return;
          if (spec.chunkDelayMs) await new Promise((r) => setTimeout(r, spec.chunkDelayMs));
        }
      }
      request.end();
    };
    write().catch(reject);
  });
}
