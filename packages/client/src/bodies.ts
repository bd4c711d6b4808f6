import { bodySize, type Body } from './sources.js';

/** How this platform sends a request with a body, reporting its bytes as they go. */
export interface BodySender {
  send(fetch: typeof globalThis.fetch, url: URL | string, init: RequestInit, body: Body, onBytes: (count: number) => void): Promise<Response>;
}

/** Slices a piece of bytes into reads of this size, so that progress moves within it. */
const READ_BYTES = 256 * 1024;

async function* counted(body: Body, onBytes: (count: number) => void): AsyncIterable<Uint8Array> {
  if (body instanceof Uint8Array) {
    for (let at = 0; at < body.byteLength; at += READ_BYTES) {
      const piece = body.subarray(at, Math.min(body.byteLength, at + READ_BYTES));
      yield piece;
      onBytes(piece.byteLength);
    }
    return;
  }
  const chunks: AsyncIterable<Uint8Array> = body instanceof Blob ? (body.stream() as unknown as AsyncIterable<Uint8Array>) : body;
  for await (const chunk of chunks) {
    yield chunk;
    onBytes(chunk.byteLength);
  }
}

function streamOf(chunks: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel(reason) {
      await iterator.return?.(reason);
    },
  });
}

/** Node.js: bodies stream (`duplex: 'half'`), counted as they are read. */
export const streamingBodies: BodySender = {
  send: (fetch, url, init, body, onBytes) => fetch(url, { ...init, body: streamOf(counted(body, onBytes)), duplex: 'half' } as RequestInit),
};

async function whole(body: Body): Promise<Uint8Array | Blob> {
  if (body instanceof Uint8Array || body instanceof Blob) return body;
  const parts: Uint8Array[] = [];
  for await (const chunk of body) parts.push(chunk);
  return new Blob(parts as never[]);
}

/** What the SDK uses of a browser's XMLHttpRequest (declared here: Node.js has none). */
interface Xhr {
  open(method: string, url: string): void;
  setRequestHeader(name: string, value: string): void;
  responseType: string;
  upload: { onprogress: ((event: { loaded: number }) => void) | null };
  onload: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
  readonly status: number;
  readonly statusText: string;
  readonly response: unknown;
  getAllResponseHeaders(): string;
  abort(): void;
  send(body: unknown): void;
}
const XhrClass = () => (globalThis as { XMLHttpRequest?: new () => Xhr }).XMLHttpRequest;

/** XMLHttpRequest, for what fetch cannot tell in a browser: how much of a request body has gone. */
function xhr(Request: new () => Xhr, url: URL | string, init: RequestInit, body: Uint8Array | Blob, onBytes: (count: number) => void): Promise<Response> {
  return new Promise((resolve, reject) => {
    const request = new Request();
    const signal = init.signal;
    request.open(init.method ?? 'POST', String(url));
    for (const [name, value] of new Headers(init.headers).entries()) request.setRequestHeader(name, value);
    request.responseType = 'arraybuffer';
    let reported = 0;
    request.upload.onprogress = (event) => {
      onBytes(event.loaded - reported);
      reported = event.loaded;
    };
    request.onload = () => {
      const headers = new Headers();
      for (const line of request.getAllResponseHeaders().trim().split(/[\r\n]+/)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      }
      const empty = request.status === 204 || request.status === 304;
      resolve(new Response(empty ? null : (request.response as ArrayBuffer), { status: request.status, statusText: request.statusText, headers }));
    };
    request.onerror = () => reject(new TypeError('The connection failed.'));
    request.onabort = () => reject(signal?.reason ?? new DOMException('Aborted', 'AbortError'));
    signal?.addEventListener('abort', () => request.abort(), { once: true });
    request.send(body);
  });
}

/**
 * Browsers: fetch sends only whole bodies over HTTP/1.1 (a stream is gathered first), and cannot
 * report their progress: XMLHttpRequest does, when the client uses the platform's own fetch.
 */
export function wholeBodies(useXhr: boolean): BodySender {
  return {
    async send(fetch, url, init, body, onBytes) {
      const bytes = await whole(body);
      const Request = XhrClass();
      if (useXhr && Request) return xhr(Request, url, init, bytes, onBytes);
      const response = await fetch(url, { ...init, body: bytes as never });
      onBytes(bodySize(bytes) ?? 0);
      return response;
    },
  };
}
