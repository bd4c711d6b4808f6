import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify';
import './route-config.js';

/**
 * Answers that go out before the request's body was read (an upload over the limit by its
 * Content-Length, a full store, a refused token) must still reach the client.
 *
 * A connection that is closed while the client is still sending its body is reset by the kernel
 * at the client's next write, and the reset throws away the answer waiting in the client's socket:
 * a client that sends its whole body before reading never sees its 413. So such a body is read
 * and thrown away, for a bounded time and size (nginx's lingering close), before the connection
 * may close: a keep-alive client gets its answer at once and the rest of its body is discarded
 * behind it; a client that asked for `Connection: close` gets its answer once its body is in.
 *
 * `Expect: 100-continue` is answered only when a route starts reading the body, so a request
 * refused before that gets its final answer instead, and never sends the body at all.
 */

/** What a body that nobody reads may still cost: nginx's lingering_time and lingering_timeout. */
export const LINGER_MAX_MS = 30_000;
export const LINGER_QUIET_MS = 5_000;
const LINGER_MAX_BYTES = 256 * 1024 * 1024;
const LINGER_CHECK_MS = 250;

/** Requests whose `100 Continue` is still unsent, with the response that would send it. */
const awaitingContinue = new WeakMap<IncomingMessage, ServerResponse>();

/** Lets requests that expect 100-continue reach the routes without it; call once per server. */
export function deferContinue(server: Server): void {
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    awaitingContinue.set(request, response);
    server.emit('request', request, response);
  });
}

/** Whether the client waits for `100 Continue` before it sends its body. */
export function awaitsContinue(request: FastifyRequest): boolean {
  return awaitingContinue.has(request.raw);
}

/** Tells a client waiting for `100 Continue` to send its body: call before reading it. */
export function continueBody(request: FastifyRequest): void {
  const response = awaitingContinue.get(request.raw);
  if (!response) return;
  awaitingContinue.delete(request.raw);
  if (!response.headersSent) response.writeContinue();
}

/** preParsing: bodies that Fastify parses are asked for here; routes that read their own ask when they are ready. */
export function continueParsedBodies(request: FastifyRequest, _reply: FastifyReply, payload: RequestPayload, done: (error: null, payload: RequestPayload) => void): void {
  if (!request.routeOptions.config.readsBodyItself) continueBody(request);
  done(null, payload);
}

/** Whether the whole request has arrived; injected requests (which have no socket) always count as arrived. */
export function bodyIsIn(request: IncomingMessage): boolean {
  return request.complete !== false;
}

function clientCloses(request: IncomingMessage): boolean {
  const connection = request.headers.connection?.toLowerCase() ?? '';
  return request.httpVersion === '1.0' ? !connection.includes('keep-alive') : connection.includes('close');
}

/**
 * Reads and throws away the rest of the body; resolves once it has all arrived, or once a bound is
 * reached (then `cut` is true and the connection must be closed).
 */
function discardRest(request: IncomingMessage): Promise<{ cut: boolean }> {
  // Whoever was reading it (the multipart parser, an upload) has given up on it.
  request.unpipe();
  request.removeAllListeners('data');
  request.resume();
  const socket = request.socket;
  const started = Date.now();
  const startBytes = socket.bytesRead;
  let lastBytes = startBytes;
  let quietSince = started;
  return new Promise((resolve) => {
    const settle = (cut: boolean) => {
      clearInterval(timer);
      request.off('end', whole);
      socket.off('close', gone);
      resolve({ cut });
    };
    const whole = () => settle(false);
    const gone = () => settle(false);
    const timer = setInterval(() => {
      const now = Date.now();
      if (socket.bytesRead !== lastBytes) {
        lastBytes = socket.bytesRead;
        quietSince = now;
      }
      if (now - started > LINGER_MAX_MS || now - quietSince > LINGER_QUIET_MS || lastBytes - startBytes > LINGER_MAX_BYTES) settle(true);
    }, LINGER_CHECK_MS);
    timer.unref();
    if (request.complete) return settle(false);
    request.once('end', whole);
    socket.once('close', gone);
  });
}

/**
 * onSend: an answer to a request whose body is not all in. A body never asked for (100-continue
 * unsent) is not coming: the connection closes after the answer. One on its way is discarded, the
 * answer going out before it (keep-alive) or after it (the client closes), within the bounds.
 */
export async function answerBeforeBody(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  const raw = request.raw;
  if (bodyIsIn(raw)) return payload;
  if (awaitingContinue.has(raw)) {
    awaitingContinue.delete(raw);
    reply.header('connection', 'close');
    return payload;
  }
  if (clientCloses(raw)) {
    const { cut } = await discardRest(raw);
    if (cut) reply.header('connection', 'close');
    return payload;
  }
  const socket = raw.socket;
  void discardRest(raw).then(({ cut }) => {
    if (cut) socket.destroy();
  });
  return payload;
}
