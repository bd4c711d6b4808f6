import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalid, problems, refused, VALIDATION_MESSAGE, type Envelope } from '../errors.js';
import { isDatabaseUnreachable } from '../services/database-failures.js';
import { isStorageError } from '../storage/errors.js';

/**
 * Every answer is the JSON envelope with Code and Message, whatever went wrong: refusals of the
 * protocol with HTTP 200, transport-level faults with their real status, and never internals.
 */

/** @fastify/under-pressure's error: the process is shedding load. */
const OVERLOADED = 'FST_UNDER_PRESSURE';
/** Seconds a client is told to wait before trying a store that did not answer. */
const STORAGE_RETRY_AFTER_SECONDS = 5;

export function sendEnvelope(reply: FastifyReply, status: number, body: Envelope): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

export function sendApiError(reply: FastifyReply, error: ApiError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers ?? {})) reply.header(name, value);
  return sendEnvelope(reply, error.statusCode, error.envelope);
}

/** The catalogue's answer for any error; undefined for a fault nobody foresaw. */
function knownError(error: Error): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (isStorageError(error)) {
    switch (error.kind) {
      case 'full':
        return refused.storageFull();
      case 'unavailable':
        return refused.storageUnavailable(STORAGE_RETRY_AFTER_SECONDS);
      case 'not-found':
        return refused.downloadNotFound();
      case 'too-large':
        return invalid.bodyTooLarge();
    }
  }
  const e = error as FastifyError;
  if (e.code === OVERLOADED) return refused.overloaded();
  if (isDatabaseUnreachable(e)) return refused.databaseUnavailable();
  if (e.statusCode === 413 || e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return invalid.bodyTooLarge();
  if (e.statusCode === 415 || e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return invalid.unsupportedBody();
  // A rate limit's own error, when it is not built by the errorResponseBuilder.
  if (e.statusCode === 429) return refused.tooManyRequests();
  // Fastify's own client errors: a body or header it could not parse. The text names no internals.
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) return invalid.unreadableBody(e.message);
  return undefined;
}

/**
 * Whether the client went away before its answer: it cut its body short (the error is then
 * Node's 'aborted', ECONNRESET), or closed the connection while the request was being served.
 */
function clientGone(request: FastifyRequest): boolean {
  return request.raw.readableAborted || request.raw.socket?.destroyed === true;
}

/** The error handler of the whole service. */
export function handleError(error: Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  // Nobody is waiting for the answer: the client's doing, not a fault of the service.
  if (clientGone(request)) {
    request.log.debug({ err: { code: (error as FastifyError).code, message: error.message } }, 'the client went away');
    // nginx's 499 (client closed request), should the answer still be written somewhere.
    return reply.code(499).send();
  }
  const known = knownError(error) ?? refused.unexpected(request.id);
  // Shed requests are counted in /metrics; a log line each would add load when there is too much.
  if ((error as FastifyError).code === OVERLOADED) return sendApiError(reply, known);
  if (known.statusCode >= 500) request.log.error({ err: error }, 'request failed');
  else if (!(error instanceof ApiError)) request.log.info({ err: { code: (error as FastifyError).code, message: error.message } }, 'request refused');
  return sendApiError(reply, known);
}

/** The answer for a path no route serves. */
export function handleNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendApiError(reply, refused.noSuchOperation(request.method, request.url.split('?')[0]!));
}

/**
 * The router's own refusals, which bypass the error handler: a path segment that is not valid
 * percent-encoding cannot be read; one longer than maxParamLength names no operation and no file.
 */
export function handleRouterError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error.code === 'FST_ERR_BAD_URL') return sendApiError(reply, invalid.badPercentEncoding());
  return handleNotFound(request, reply);
}

/**
 * The answer to each error code of Node's HTTP parser (llhttp) that says what was wrong with the
 * request; any other code gets the general "could not be read".
 */
const CLIENT_ERRORS: Record<string, { status: string; problem: string }> = {
  HPE_INVALID_METHOD: { status: '400 Bad Request', problem: problems.badRequestLine },
  HPE_INVALID_URL: { status: '400 Bad Request', problem: problems.badRequestLine },
  // A space in the path: what follows it is not "HTTP/".
  HPE_INVALID_CONSTANT: { status: '400 Bad Request', problem: problems.badRequestLine },
  HPE_INVALID_VERSION: { status: '400 Bad Request', problem: problems.badRequestLine },
  // A bare LF (or CR) in a header line: what curl sends for a -H value with a line break in it.
  HPE_CR_EXPECTED: { status: '400 Bad Request', problem: problems.headerLineBreak },
  HPE_LF_EXPECTED: { status: '400 Bad Request', problem: problems.headerLineBreak },
  // A bad character in a name or value, or a line without a colon (a value wrapped with CR LF).
  HPE_INVALID_HEADER_TOKEN: { status: '400 Bad Request', problem: problems.badHeaderLine },
  HPE_INVALID_CONTENT_LENGTH: { status: '400 Bad Request', problem: problems.badContentLength },
  HPE_UNEXPECTED_CONTENT_LENGTH: { status: '400 Bad Request', problem: problems.badContentLength },
  HPE_INVALID_TRANSFER_ENCODING: { status: '400 Bad Request', problem: problems.badTransferEncoding },
  HPE_HEADER_OVERFLOW: { status: '431 Request Header Fields Too Large', problem: problems.headersTooLarge },
  // The headers did not arrive within HEADERS_TIMEOUT_SECONDS.
  ERR_HTTP_REQUEST_TIMEOUT: { status: '408 Request Timeout', problem: problems.headersTimeout },
};

const UNREADABLE = { status: '400 Bad Request', problem: problems.unreadableHttp };

/** A request Node's HTTP parser could not read: answered on the socket, before Fastify sees it. */
export function handleClientError(error: Error, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy(error);
    return;
  }
  const { status, problem } = CLIENT_ERRORS[(error as { code?: string }).code ?? ''] ?? UNREADABLE;
  const body = JSON.stringify({ Code: -10, Message: VALIDATION_MESSAGE, Items: [problem] });
  socket.end(
    `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
