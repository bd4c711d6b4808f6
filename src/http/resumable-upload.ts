import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalidInput, resumableProblems, resumableRefused } from '../errors.js';
import { appendToResumable, completeResumable, createResumable, findResumable, newUploadId, removeResumable } from '../services/resumable-uploads.js';
import { admitHeavy } from './admission.js';
import { publicBaseUrl } from './public-url.js';
import { internetPath } from './views.js';
import { creationRefusal, validateCreation } from './resumable-creation.js';
import { carriesUploadBytes, formatMetadata, header, httpDate, sizeHeader, TUS_EXTENSIONS, TUS_VERSION } from './tus-headers.js';
import { continueBody } from './unread-bodies.js';

export const RESUMABLE_PATH = '/API/ResumableUpload';
const ID = /^[a-f0-9]{32}$/;

/** Aborts once the client has gone away before its answer. */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

function declaredLength(request: FastifyRequest): number | undefined {
  const length = sizeHeader(request.headers, 'content-length');
  return typeof length === 'number' ? length : undefined;
}

/**
 * The tus 1.0.0 endpoint (contract section 11), routes of the service's own over the resumable
 * service, so every hook of the service (CORS, rate limits, load shedding, shutdown, security
 * headers, metrics) applies to it as to any route. The state, the locks and the bytes are the
 * service's (services/resumable-uploads.ts); these routes only read tus's headers and write its answers.
 */
export default async function resumableUploadRoutes(fastify: FastifyInstance): Promise<void> {
  const { maxUploadBytes } = fastify.config;
  const ctx = fastify.resumable;
  const { resumableUploads, resumableReceivedBytes } = fastify.metrics;

  /**
   * Requests still running. A shutdown cuts their connections after its grace period, then waits
   * here before the database closes, so each PATCH records the bytes it received.
   */
  const running = new Set<Promise<unknown>>();
  fastify.addHook('onClose', async () => {
    await Promise.allSettled(running);
  });
  const tracked = <T>(work: Promise<T>): Promise<T> => {
    running.add(work);
    const settled = () => running.delete(work);
    work.then(settled, settled);
    return work;
  };

  // The body is the upload's, read as a stream by the handlers: no parser may buffer it.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (_request, _payload, done) => done(null));
  // tus answers carry the protocol's version, refusals included; every request but OPTIONS must name it.
  fastify.addHook('onRequest', async (request, reply) => {
    if (request.method === 'OPTIONS') return;
    reply.header('Tus-Resumable', TUS_VERSION);
    if (request.headers['tus-resumable'] === undefined) throw resumableRefused.tusResumableRequired();
  });

  /** Appends the request's body and answers with the new offset; the last bytes make the upload a file first. */
  const append = async (request: FastifyRequest, reply: FastifyReply, uploadId: string, offset: number): Promise<void> => {
    continueBody(request);
    const admit = (appId: string) => admitHeavy(request, reply, appId, 'uploads');
    const patched = await tracked(appendToResumable(ctx, uploadId, { offset, source: request.raw, bodyBytes: declaredLength(request), signal: clientGone(reply), admit }));
    resumableReceivedBytes.inc(patched.offset - offset);
    reply.header('Upload-Offset', patched.offset).header('Upload-Expires', httpDate(patched.expiresAt));
    if (patched.offset < patched.size) return;
    const file = await tracked(completeResumable(ctx, uploadId)).catch((error: unknown) => {
      resumableUploads.inc({ event: 'refused' });
      throw creationRefusal(error);
    });
    // Another request completed it first.
    if (!file) throw resumableRefused.notFound();
    resumableUploads.inc({ event: 'completed' });
    reply.header('Upload-File-Key', file.fileKey).header('Upload-File-Path', internetPath(publicBaseUrl(request), file.bucketName, file.fileName));
  };

  const config = { operation: 'ResumableUpload', readsBodyItself: true };
  const tags = ['Files'];
  const route = { config, exposeHeadRoute: false };

  const options = (_request: FastifyRequest, reply: FastifyReply) =>
    reply
      .code(204)
      .header('Tus-Resumable', TUS_VERSION)
      .header('Tus-Version', TUS_VERSION)
      .header('Tus-Extension', TUS_EXTENSIONS.join(','))
      .header('Tus-Max-Size', maxUploadBytes)
      .send();
  fastify.options(RESUMABLE_PATH, { ...route, schema: { tags, summary: 'The tus capabilities: version, extensions and the largest upload.' } }, options);
  fastify.options(`${RESUMABLE_PATH}/:id`, { ...route, schema: { tags, summary: 'The tus capabilities, at an upload’s URL.' } }, options);

  fastify.post(
    RESUMABLE_PATH,
    {
      ...route,
      schema: {
        tags,
        summary: 'Creates a resumable upload (tus creation, and creation-with-upload).',
        description:
          'Headers: `Tus-Resumable: 1.0.0`, `Authorization: Bearer <AccessToken>` (or the Upload-Metadata key AccessToken), `Upload-Length`, ' +
          '`Upload-Metadata` with filename, BucketId and AliveDays (each value base64). Validated like UploadFile before any byte is accepted. ' +
          'Answers 201 with the upload’s `Location` and `Upload-Expires`; with a body of type application/offset+octet-stream, its bytes are the first of the upload.',
      },
    },
    async (request, reply) => {
      await fastify.storage.checkWritable();
      const target = await validateCreation(request, maxUploadBytes);
      const uploadId = newUploadId();
      const row = await createResumable(ctx, uploadId, target);
      resumableUploads.inc({ event: 'created' });
      reply.code(201).header('Location', `${publicBaseUrl(request)}${RESUMABLE_PATH}/${uploadId}`).header('Upload-Expires', httpDate(row.expires_at));
      // An empty file is complete at once; otherwise the body, if any, is its first bytes.
      if (target.size === 0 || (carriesUploadBytes(request.headers) && declaredLength(request) !== 0)) await append(request, reply, uploadId, 0);
      return reply.send();
    },
  );

  fastify.head<{ Params: { id: string } }>(
    `${RESUMABLE_PATH}/:id`,
    { ...route, schema: { tags, summary: 'The offset of a resumable upload: where to resume.' } },
    async (request, reply) => {
      const row = ID.test(request.params.id) ? await findResumable(ctx.db, request.params.id) : undefined;
      if (!row) throw resumableRefused.notFound();
      if (row.expires_at.getTime() <= Date.now()) throw resumableRefused.gone();
      return reply
        .header('Cache-Control', 'no-store')
        .header('Upload-Offset', row.offset_bytes)
        .header('Upload-Length', row.size_bytes)
        .header('Upload-Metadata', formatMetadata(JSON.parse(row.metadata) as Record<string, string | null>))
        .header('Upload-Expires', httpDate(row.expires_at))
        .send();
    },
  );

  fastify.patch<{ Params: { id: string } }>(
    `${RESUMABLE_PATH}/:id`,
    {
      ...route,
      schema: {
        tags,
        summary: 'Appends bytes to a resumable upload at its current offset.',
        description:
          'Headers: `Tus-Resumable: 1.0.0`, `Content-Type: application/offset+octet-stream`, `Upload-Offset` (the current offset, from HEAD). ' +
          'Answers 204 with the new `Upload-Offset` once the bytes are durable; the request that delivers the last byte also carries ' +
          '`Upload-File-Key` and `Upload-File-Path`. 409 for another offset, 413 past the upload’s length, 423 while another request writes it.',
      },
    },
    async (request, reply) => {
      if (!carriesUploadBytes(request.headers)) throw resumableRefused.patchContentType();
      const offset = sizeHeader(request.headers, 'upload-offset');
      if (offset === undefined) throw invalidInput([resumableProblems.uploadOffsetRequired], 400);
      if (offset === 'invalid') throw invalidInput([resumableProblems.badUploadOffset(String(header(request.headers, 'upload-offset')))], 400);
      if (!ID.test(request.params.id)) throw resumableRefused.notFound();
      await append(request, reply, request.params.id, offset);
      return reply.code(204).send();
    },
  );

  fastify.delete<{ Params: { id: string } }>(
    `${RESUMABLE_PATH}/:id`,
    { ...route, schema: { tags, summary: 'Terminates a resumable upload: its state and bytes are removed.' } },
    async (request, reply) => {
      if (!ID.test(request.params.id) || !(await findResumable(ctx.db, request.params.id))) throw resumableRefused.notFound();
      await removeResumable(ctx, [request.params.id]);
      resumableUploads.inc({ event: 'terminated' });
      return reply.code(204).send();
    },
  );
}
