import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Clients that send a whole request body before they look at the answer, as most programs do: a
 * refusal must reach them as their answer, never as a reset.
 */

export interface WholeBodyAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
  /** The socket error that ended the exchange before a whole answer was read, if one did. */
  error?: string;
}

let bodies = 0;

/** How long one exchange may take before it counts as hung. */
const HANG_MS = 15_000;

function parseAnswer(bytes: Buffer): Omit<WholeBodyAnswer, 'error'> | undefined {
  const text = bytes.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? NaN);
  const rest = bytes.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  if (!Number.isInteger(length) || rest.length < length) return undefined;
  let body: Record<string, unknown> | undefined;
  try {
    body = JSON.parse(rest.subarray(0, length).toString('utf8'));
  } catch {
    body = undefined;
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body };
}

/**
 * Over a raw socket: writes the head and then every byte of a body of `bodyBytes` (waiting for each
 * write to drain), and only then reads the answer. `connection` is the header sent.
 */
export function wholeBodyThenRead(
  baseUrl: string,
  request: { method: string; path: string; headers: Record<string, string | number>; head?: Buffer; tail?: Buffer; bodyBytes: number; connection: 'keep-alive' | 'close' },
): Promise<WholeBodyAnswer> {
  const { hostname, port } = new URL(baseUrl);
  const head = request.head ?? Buffer.alloc(0);
  const tail = request.tail ?? Buffer.alloc(0);
  const headers = { ...request.headers, 'Content-Length': head.length + request.bodyBytes + tail.length, Connection: request.connection, Host: `${hostname}:${port}` };
  const lines = [`${request.method} ${request.path} HTTP/1.1`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`), '', ''];
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    const received: Buffer[] = [];
    let writing = true;
    let settled = false;
    const settle = (answer: WholeBodyAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(hang);
      socket.destroy();
      resolve(answer);
    };
    const hang = setTimeout(() => settle({ status: 0, headers: {}, body: undefined, error: writing ? 'hung while sending the body' : 'hung waiting for the answer' }), HANG_MS);
    // The answer is looked at only once the whole body is sent: what arrives meanwhile waits in the kernel.
    socket.pause();
    socket.on('error', (error: NodeJS.ErrnoException) => settle({ status: 0, headers: {}, body: undefined, error: error.code ?? error.message }));
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      const answer = parseAnswer(Buffer.concat(received));
      if (answer) settle(answer);
    });
    socket.on('end', () => settle({ ...(parseAnswer(Buffer.concat(received)) ?? { status: 0, headers: {}, body: undefined }), error: parseAnswer(Buffer.concat(received)) ? undefined : 'closed before a whole answer' }));
    socket.once('connect', async () => {
      const chunk = Buffer.alloc(256 * 1024, 0x61);
      const write = (bytes: Buffer) => (socket.write(bytes) ? Promise.resolve() : new Promise<void>((r) => socket.once('drain', () => r())));
      try {
        await write(Buffer.from(lines.join('\r\n')));
        await write(head);
        for (let sent = 0; sent < request.bodyBytes && !settled; sent += chunk.length) await write(chunk.subarray(0, Math.min(chunk.length, request.bodyBytes - sent)));
        await write(tail);
      } catch {
        return;
      }
      writing = false;
      socket.resume();
    });
  });
}

/**
 * Through Node's http client (a keep-alive agent, or none): the body written whole before the
 * answer is awaited. An error after the answer arrived (Node's client ends its own socket on a
 * `Connection: close` answer while it still writes) is the client's, and does not count.
 */
export async function nodeClientWholeBody(
  baseUrl: string,
  request: { path: string; headers: Record<string, string | number>; head?: Buffer; tail?: Buffer; bodyBytes: number; agent: http.Agent | false },
): Promise<WholeBodyAnswer> {
  const head = request.head ?? Buffer.alloc(0);
  const tail = request.tail ?? Buffer.alloc(0);
  return new Promise((resolve) => {
    let answer: WholeBodyAnswer | undefined;
    const req = http.request(new URL(request.path, baseUrl), {
      method: 'POST',
      agent: request.agent,
      headers: { ...request.headers, 'Content-Length': head.length + request.bodyBytes + tail.length },
    });
    const hang = setTimeout(() => {
      req.destroy();
      resolve(answer ?? { status: 0, headers: {}, body: undefined, error: 'hung' });
    }, HANG_MS);
    req.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(hang);
      resolve(answer ?? { status: 0, headers: {}, body: undefined, error: error.code ?? error.message });
    });
    req.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        let body: Record<string, unknown> | undefined;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = undefined;
        }
        answer = { status: response.statusCode ?? 0, headers: response.headers as Record<string, string>, body };
        clearTimeout(hang);
        resolve(answer);
      });
    });
    void (async () => {
      const chunk = Buffer.alloc(256 * 1024, 0x61);
      const write = (bytes: Buffer) => (req.write(bytes) ? Promise.resolve() : new Promise<void>((r) => req.once('drain', () => r())));
      await write(head);
      for (let sent = 0; sent < request.bodyBytes && !req.destroyed; sent += chunk.length) await write(chunk.subarray(0, Math.min(chunk.length, request.bodyBytes - sent)));
      req.end(tail);
    })().catch(() => {});
  });
}

/** curl posting a file of `bodyBytes`; `expect: false` turns off its `Expect: 100-continue`. */
export async function curlPost(
  baseUrl: string,
  request: { path: string; headers: Record<string, string>; head?: Buffer; tail?: Buffer; bodyBytes: number; dir: string; expect: boolean },
): Promise<WholeBodyAnswer> {
  const file = path.join(request.dir, `curl-body-${++bodies}`);
  await writeFile(file, Buffer.concat([request.head ?? Buffer.alloc(0), Buffer.alloc(request.bodyBytes, 0x61), request.tail ?? Buffer.alloc(0)]));
  const args = ['-sS', '--max-time', '15', '-o', '-', '-w', '\n%{http_code}', '-X', 'POST', '--data-binary', `@${file}`];
  for (const [name, value] of Object.entries(request.headers)) args.push('-H', `${name}: ${value}`);
  if (!request.expect) args.push('-H', 'Expect:');
  args.push(new URL(request.path, baseUrl).href);
  return new Promise((resolve) => {
    execFile('curl', args, { encoding: 'utf8' }, (error, stdout, stderr) => {
      const lines = stdout.trimEnd().split('\n');
      const status = Number(lines.pop());
      let body: Record<string, unknown> | undefined;
      try {
        body = JSON.parse(lines.join('\n'));
      } catch {
        body = undefined;
      }
      resolve({ status, headers: {}, body, ...(error ? { error: `curl exit ${error.code}: ${stderr.trim()}` } : {}) });
    });
  });
}

/** Waits a moment between tries, so that each begins on a fresh connection of the server's. */
export const pause = () => sleep(5);
