import { createHash } from 'node:crypto';
import http from 'node:http';

export interface DownloadResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  sha256: string;
  /** The body parsed as JSON, for the envelope of a refusal; undefined when it is not JSON. */
  json: Record<string, unknown> | undefined;
}

export interface DownloadOptions {
  method?: 'GET' | 'HEAD';
  headers?: Record<string, string>;
  agent?: http.Agent;
}

/**
 * A request over a real socket, the path sent exactly as given (no URL normalisation, so that
 * `..`, `%2F` and `//` reach the server as a client could send them).
 */
export function download(baseUrl: string, path: string, options: DownloadOptions = {}): Promise<DownloadResult> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({ hostname, port, path, method: options.method ?? 'GET', headers: options.headers, agent: options.agent });
    request.on('error', reject);
    request.on('response', (response) => {
      const hash = createHash('sha256');
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        chunks.push(chunk);
      });
      response.on('error', reject);
      response.on('end', () => {
        const body = Buffer.concat(chunks);
        let json: Record<string, unknown> | undefined;
        if (body.length > 0 && /^application\/json/.test(response.headers['content-type'] ?? '')) json = JSON.parse(body.toString('utf8'));
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body, sha256: hash.digest('hex'), json });
      });
    });
    request.end();
  });
}

/**
 * Starts a GET, reads the first `bytes` of the body, then stops reading and destroys the
 * connection, as a client that gives up would. Resolves with the status seen.
 */
export function abortDownload(baseUrl: string, path: string, bytes: number): Promise<number> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({ hostname, port, path, agent: false });
    request.on('error', () => {});
    request.on('response', (response) => {
      let seen = 0;
      response.on('error', () => {});
      response.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen >= bytes) {
          response.pause();
          request.destroy();
          resolve(response.statusCode ?? 0);
        }
      });
      response.on('end', () => reject(new Error('the whole body arrived before the client gave up')));
    });
    request.end();
  });
}
