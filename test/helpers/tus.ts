import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface TusResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request over a real socket; the body is sent whole. */
export function tusRequest(url: string, method: string, headers: Record<string, string | number>, body?: Buffer): Promise<TusResponse> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers: { 'Tus-Resumable': '1.0.0', ...headers } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** Upload-Metadata: each value base64, keys as given. */
export function metadata(entries: Record<string, string>): string {
  return Object.entries(entries)
    .map(([key, value]) => `${key} ${Buffer.from(value).toString('base64')}`)
    .join(',');
}

/**
 * A PATCH that announces the rest of the upload but sends only `sendBytes` of it, waits until the
 * server has them, and then destroys the socket: a connection dropped mid-body.
 */
export async function patchThenDrop(url: string, offset: number, rest: Buffer, sendBytes: number): Promise<void> {
  const request = http.request(url, {
    method: 'PATCH',
    headers: {
      'Tus-Resumable': '1.0.0',
      'Content-Type': 'application/offset+octet-stream',
      'Upload-Offset': offset,
      'Content-Length': rest.length,
    },
  });
  request.on('error', () => {});
  request.on('response', (response) => response.resume());
  await new Promise<void>((resolve) => request.write(rest.subarray(0, sendBytes), () => resolve()));
  // Long enough for the bytes to cross the loopback and reach the store.
  await sleep(300);
  request.destroy();
}
