import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError, VALIDATION_MESSAGE, type Envelope } from '../src/errors.js';

/**
 * Every answer is the JSON envelope with Code and Message, whatever went wrong: refusals of the
 * protocol with HTTP 200, transport-level faults with their real status, and never internals.
 */

/** Errors of the pg driver and of PostgreSQL that mean "the database cannot be reached right now". */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', '53300']);
const UNREACHABLE_MESSAGES = [/Connection terminated/i, /timeout exceeded when trying to connect/i, /Client has encountered a connection error/i, /Cannot use a pool after calling end/i];

/** @fastify/under-pressure's error: the process is shedding load. */
const OVERLOADED = 'FST_UNDER_PRESSURE';

export function isDatabaseUnreachable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && (UNREACHABLE_CODES.has(e.code) || e.code.startsWith('08'))) return true;
  return typeof e.message === 'string' && UNREACHABLE_MESSAGES.some((re) => re.test(e.message as string));
}

function envelopeFor(error: FastifyError | ApiError | Error, request: FastifyRequest): { status: number; body: Envelope } {
  if (error instanceof ApiError) {
    const body: Envelope = { Code: error.code, Message: error.message };
    if (error.items) body.Items = error.items;
    return { status: error.statusCode, body };
  }
  const e = error as FastifyError & { code?: string };
  if (e.code === 'ENOSPC') {
    return { status: 507, body: { Code: -1, Message: 'The storage is full; the file was not stored.' } };
  }
  if (e.code === OVERLOADED) {
    return { status: 503, body: { Code: -1, Message: 'The service is overloaded right now; try again shortly.' } };
  }
  if (isDatabaseUnreachable(e)) {
    return { status: 503, body: { Code: -1, Message: 'The database is unreachable right now; try again shortly.' } };
  }
  if (e.statusCode === 413 || e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return { status: 413, body: { Code: -10, Message: VALIDATION_MESSAGE, Items: ['The request body is larger than the service accepts.'] } };
  }
  if (e.statusCode === 415 || e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return {
      status: 415,
      body: {
        Code: -10,
        Message: VALIDATION_MESSAGE,
        Items: ['The request body must be application/x-www-form-urlencoded (multipart/form-data for UploadFile).'],
      },
    };
  }
  if (e.statusCode === 429) {
    return { status: 429, body: { Code: -1, Message: e.message || 'Too many requests; slow down.' } };
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    // Fastify's own client errors: a body or header it could not parse. The text names no internals.
    return { status: 400, body: { Code: -10, Message: VALIDATION_MESSAGE, Items: [`The request could not be read: ${e.message}`] } };
  }
  return {
    status: 500,
    body: { Code: -1, Message: `An unexpected error occurred; quote reference ${request.id} when reporting it.` },
  };
}

export function sendEnvelope(reply: FastifyReply, status: number, body: Envelope): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

/** The answer for a path no route serves. */
function noSuchOperation(request: FastifyRequest): Envelope {
  return { Code: -1, Message: `There is no ${request.method} operation at ${request.url.split('?')[0].slice(0, 200)}.` };
}

/**
 * The router's own refusals, which bypass the error handler: a path segment that is not valid
 * percent-encoding cannot be read; one longer than maxParamLength names no operation and no file.
 */
export function routerErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error.code === 'FST_ERR_BAD_URL') {
    return sendEnvelope(reply, 400, { Code: -10, Message: VALIDATION_MESSAGE, Items: ['The request path is not valid percent-encoding.'] });
  }
  return sendEnvelope(reply, 404, noSuchOperation(request));
}

export default fp(
  async (fastify) => {
    fastify.setErrorHandler((error, request, reply) => {
      const { status, body } = envelopeFor(error as Error, request);
      // Shed requests are counted in /metrics; a log line each would add load when there is too much.
      if ((error as FastifyError).code === OVERLOADED) return sendEnvelope(reply, status, body);
      if (status >= 500) request.log.error({ err: error }, 'request failed');
      else if (!(error instanceof ApiError)) request.log.info({ err: { code: (error as FastifyError).code, message: (error as Error).message } }, 'request refused');
      return sendEnvelope(reply, status, body);
    });

    fastify.setNotFoundHandler((request, reply) => sendEnvelope(reply, 404, noSuchOperation(request)));
  },
  { name: 'envelope', fastify: '5.x' },
);
