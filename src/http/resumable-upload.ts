import type { IncomingMessage } from 'node:http';
import { Server, type ServerOptions } from '@tus/server';
import { ERRORS, EVENTS, type Upload } from '@tus/utils';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalidInput, refused, resumableMessages, resumableProblems, type Envelope } from '../errors.js';
import { internetPath } from '../services/files.js';
import { completeResumable, findResumable, newUploadId, type ResumableTarget } from '../services/resumable-uploads.js';
import { isStorageError } from '../storage/errors.js';
import { sendApiError } from './envelope.js';
import { fetchRequest } from './fetch-request.js';
import { publicBaseUrl } from './public-url.js';
import { asCreationRefusal, validateCreation } from './resumable-creation.js';
import { continueBody } from './unread-bodies.js';
import { LeaseLocker, noLocker, ServiceDataStore, uploadLocked, type TusError } from './tus-adapters.js';

export const RESUMABLE_PATH = '/API/ResumableUpload';
const TUS_VERSION = '1.0.0';
const PATCH_CONTENT_TYPE = 'application/offset+octet-stream';
const ID = /^[a-f0-9]{32}$/;
/** Seconds a client is told to wait before trying a store that did not answer. */
const STORAGE_RETRY_AFTER_SECONDS = 5;

/** What the route learnt about a request before @tus/server handles it. */
interface Prepared {
  baseUrl: string;
  target?: ResumableTarget;
  /** The upload this request completed, remembered by the datastore until the answer is built. */
  completed?: string;
}

/** The tus errors @tus/server throws, as envelopes with the same status. */
function envelopeOf(error: TusError): Envelope {
  switch (error) {
    case ERRORS.FILE_NOT_FOUND:
      return { Code: -1, Message: resumableMessages.notFound };
    case ERRORS.FILE_NO_LONGER_EXISTS:
      return { Code: -1, Message: resumableMessages.gone };
    case ERRORS.INVALID_OFFSET:
      return { Code: -1, Message: resumableMessages.offsetConflict };
    case uploadLocked:
      return { Code: -1, Message: resumableMessages.locked };
    case ERRORS.ERR_SIZE_EXCEEDED:
    case ERRORS.ERR_MAX_SIZE_EXCEEDED:
      return { Code: -10, Message: invalidInput([]).message, Items: [resumableProblems.tooLong] };
    default:
      return error.status_code < 500 ? { Code: -10, Message: invalidInput([]).message, Items: [error.body.trim()] } : { Code: -1, Message: error.body.trim() };
  }
}

/**
 * The tus 1.0.0 endpoint (contract section 11), served by @tus/server inside Fastify, so the
 * service's hooks (rate limits, load shedding, shutdown, security headers, metrics) apply to it.
 * The route checks what the contract answers with the envelope before @tus/server sees a request;
 * @tus/server speaks the protocol; the services keep state, bytes and the one upload flow.
 */
export default async function resumableUploadRoutes(fastify: FastifyInstance): Promise<void> {
  const { maxUploadBytes } = fastify.config;
  const ctx = fastify.resumable;
  const prepared = new WeakMap<IncomingMessage, Prepared>();
  const targets = new WeakMap<Upload, ResumableTarget>();
  const nodeRequest = (req: Request) => (req as unknown as { runtime?: { node?: { req: IncomingMessage } } }).runtime?.node?.req;
  const preparedOf = (req: Request) => {
    const raw = nodeRequest(req);
    const found = raw && prepared.get(raw);
    if (!found) throw ERRORS.UNKNOWN_ERROR;
    return found;
  };

  const leases = new LeaseLocker(ctx);
  const options: ServerOptions = {
    path: RESUMABLE_PATH,
    maxSize: maxUploadBytes,
    locker: (req) => (req.method === 'HEAD' ? noLocker : leases.forRequest(req)),
    namingFunction: () => newUploadId(),
    getFileIdFromRequest: (_req, lastPath) => (lastPath && ID.test(lastPath) ? lastPath : undefined),
    generateUrl: (req, { id }) => `${preparedOf(req).baseUrl}${RESUMABLE_PATH}/${id}`,
    // Browsers on other origins are let in by the service's CORS policy, not by this endpoint.
    allowedOrigins: () => false,
    onUploadCreate: async (req, upload) => {
      const { target } = preparedOf(req);
      if (!target) throw ERRORS.UNKNOWN_ERROR;
      targets.set(upload, target);
      return {};
    },
    onUploadFinish: async (req, upload) => {
      const stored = await completeResumable(ctx, upload.id).catch((error: unknown) => {
        resumableUploads.inc({ event: 'refused' });
        throw error;
      });
      if (!stored) throw ERRORS.FILE_NOT_FOUND;
      resumableUploads.inc({ event: 'completed' });
      datastore.rememberCompleted(upload);
      preparedOf(req).completed = upload.id;
      const path = internetPath(preparedOf(req).baseUrl, stored.bucketName, stored.fileName);
      return { headers: { 'Upload-File-Key': String(stored.fileKey), 'Upload-File-Path': path } };
    },
    onResponseError: (req, error) => {
      const { status, envelope } = answerFor(error, nodeRequest(req));
      return { status_code: status, body: JSON.stringify(envelope) };
    },
  };
  const { resumableUploads, resumableReceivedBytes } = fastify.metrics;
  const datastore = new ServiceDataStore(ctx, (upload) => targets.get(upload), (bytes) => resumableReceivedBytes.inc(bytes), leases);
  const tus = new Server({ ...options, datastore });
  tus.on(EVENTS.POST_CREATE, () => resumableUploads.inc({ event: 'created' }));
  tus.on(EVENTS.POST_TERMINATE, () => resumableUploads.inc({ event: 'terminated' }));

  /** Any error @tus/server met, as a status and the envelope; faults are logged, never shown. */
  const answerFor = (error: unknown, raw: IncomingMessage | undefined): { status: number; envelope: Envelope } => {
    // A refusal at completion (the name was taken meanwhile, the bucket went away): 409 or 403.
    const refusal = asCreationRefusal(error);
    if (refusal instanceof ApiError) return { status: refusal.statusCode, envelope: refusal.envelope };
    if (isStorageError(error, 'full')) return { status: 507, envelope: refused.storageFull().envelope };
    if (isStorageError(error)) return { status: 503, envelope: refused.storageUnavailable(STORAGE_RETRY_AFTER_SECONDS).envelope };
    const tusError = error as Partial<TusError>;
    if (typeof tusError.status_code === 'number' && typeof tusError.body === 'string' && tusError.status_code < 500) {
      return { status: tusError.status_code, envelope: envelopeOf(tusError as TusError) };
    }
    const reference = raw && requestIds.get(raw);
    fastify.log.error({ err: error, reqId: reference }, 'resumable upload failed');
    return { status: 500, envelope: refused.unexpected(reference ?? 'unknown').envelope };
  };
  const requestIds = new WeakMap<IncomingMessage, string>();

  /**
   * Requests still running. A shutdown cuts their connections after its grace period, then waits
   * here before the database closes, so each PATCH records the bytes it received.
   */
  const running = new Set<Promise<unknown>>();
  fastify.addHook('onClose', async () => {
    await Promise.allSettled(running);
  });
  const handle = (request: FastifyRequest, reply: FastifyReply, extra: Omit<Prepared, 'baseUrl'> = {}) => {
    const handled = respond(request, reply, extra);
    running.add(handled);
    const settled = () => running.delete(handled);
    handled.then(settled, settled);
    return handled;
  };

  /** @tus/server's answer, sent through Fastify's reply so its hooks see it. */
  const respond = async (request: FastifyRequest, reply: FastifyReply, extra: Omit<Prepared, 'baseUrl'> = {}) => {
    const state: Prepared = { baseUrl: publicBaseUrl(request), ...extra };
    prepared.set(request.raw, state);
    requestIds.set(request.raw, request.id);
    let response: Response;
    try {
      response = await tus.handleWeb(fetchRequest(request.raw, reply.raw));
    } finally {
      if (state.completed) datastore.forgetCompleted(state.completed);
    }
    const body = response.body ? await response.text() : '';
    response.headers.forEach((value, name) => {
      if (name !== 'content-length') reply.header(name, value);
    });
    // @tus/server leaves it out of HEAD answers; the contract has it on every answer.
    if (request.method === 'HEAD' && response.status === 200) {
      const row = await findResumable(ctx.db, (request.params as { id: string }).id);
      if (row) reply.header('Upload-Expires', row.expires_at.toUTCString());
    }
    reply.code(response.status);
    if (body.startsWith('{')) reply.type('application/json; charset=utf-8');
    return reply.send(body || undefined);
  };

  /** tus's own rules that the contract answers with the envelope: 412 without Tus-Resumable, 415 for a PATCH of another type. */
  const refuseProtocol = (request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined => {
    if (request.headers['tus-resumable'] === undefined) {
      reply.header('Tus-Version', TUS_VERSION);
      return sendApiError(reply, new ApiError(-1, resumableMessages.tusResumableRequired, 412));
    }
    if (request.method === 'PATCH' && request.headers['content-type']?.trim().toLowerCase() !== PATCH_CONTENT_TYPE) {
      reply.header('Tus-Resumable', TUS_VERSION);
      return sendApiError(reply, invalidInput([resumableProblems.patchContentType], 415));
    }
    return undefined;
  };

  // The body is @tus/server's to read, as a stream: no parser may buffer it.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (_request, _payload, done) => done(null));

  const config = { operation: 'ResumableUpload', readsBodyItself: true };
  const schema = {
    tags: ['Files'],
    summary: 'Resumable uploads with the tus 1.0.0 protocol (creation, creation-with-upload, termination, expiration).',
    description:
      'POST creates an upload (Authorization: Bearer <AccessToken>, Upload-Length, Upload-Metadata with filename, BucketId, AliveDays); ' +
      'HEAD, PATCH and DELETE act on the Location it answers with. The request that delivers the last byte answers with Upload-File-Key and Upload-File-Path.',
  };
  fastify.route({
    method: ['OPTIONS'],
    url: RESUMABLE_PATH,
    config,
    schema,
    handler: (request, reply) => handle(request, reply),
  });
  fastify.route({
    method: ['POST'],
    url: RESUMABLE_PATH,
    config,
    schema,
    handler: async (request, reply) => {
      const refusal = refuseProtocol(request, reply);
      if (refusal) return refusal;
      await ctx.storage.checkWritable();
      const target = await validateCreation(request, maxUploadBytes);
      continueBody(request);
      return handle(request, reply, { target });
    },
  });
  fastify.route({
    method: ['HEAD', 'PATCH', 'DELETE', 'OPTIONS'],
    url: `${RESUMABLE_PATH}/:id`,
    config,
    schema,
    handler: async (request, reply) => {
      if (request.method !== 'OPTIONS') {
        const refusal = refuseProtocol(request, reply);
        if (refusal) return refusal;
      }
      continueBody(request);
      return handle(request, reply);
    },
  });
}
