import type { IncomingHttpHeaders } from 'node:http';
import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalid, invalidInput, problems, succeeded } from '../errors.js';
import { sanitizeFileName } from '../services/file-names.js';
import { internetPath } from '../services/files.js';
import { authorizeTokenUpload, storeUpload, type UploadBucket, type UploadTarget } from '../services/uploads.js';
import { bindRequest, field, param, type Bound, type Source } from './binding.js';
import { contextOf } from './context.js';
import { exampleBaseUrl } from './examples.js';
import { envelopeResponses, parametersSchema, tokenSecurity } from './operation.js';
import { publicBaseUrl } from './public-url.js';
import { drain, uploadError, UploadForm } from './upload-form.js';

const params = {
  AccessToken: param.accessToken(),
  BucketId: param.bucketId(),
  AliveDays: field.integer({ minimum: 1, maximum: 18250 }),
};
/** What decides whether an upload is refused: known before the file part, no byte is stored. */
const authorizing = { AccessToken: params.AccessToken, BucketId: params.BucketId };
type Authorizing = Bound<typeof authorizing>;

/** The body's Content-Length, when it has one: no file in the form can be longer. */
function declaredLength(headers: IncomingHttpHeaders): number | undefined {
  const length = Number(headers['content-length'] ?? NaN);
  return Number.isSafeInteger(length) ? length : undefined;
}

/** Room for the multipart framing and the small fields around the file. */
const FORM_OVERHEAD_BYTES = 1024 * 1024;

const schema = {
  operationId: 'UploadFile',
  summary: 'Upload one file into a bucket; its bytes stream into the store.',
  description: 'AccessToken, BucketId and AliveDays come from the query string, as real clients send them, or as form fields before or after the file part; the AccessToken may instead come as `Authorization: Bearer <token>`.',
  tags: ['Files'],
  ...tokenSecurity(params),
  querystring: parametersSchema(params, {}, { BucketId: 1, AliveDays: 30 }),
  body: {
    content: {
      'multipart/form-data': {
        schema: parametersSchema({}, { File: { type: 'string', format: 'binary', description: 'Exactly one file part, under any field name.' } }),
      },
    },
  },
  response: envelopeResponses(
    { FileKey: { type: 'integer' }, Path: { type: 'string', description: 'The InternetPath of the file.' } },
    { FileKey: 7, Path: `${exampleBaseUrl}/holiday-photos/beach%202026.jpg`, Message: succeeded.fileUploaded },
  ),
};

type UploadParams = Bound<typeof params>;

/** Binds the form's fields and checks its file name, reporting every problem at once. */
function bindForm(headers: IncomingHttpHeaders, query: Source, fields: Source, file: undefined): never;
function bindForm(headers: IncomingHttpHeaders, query: Source, fields: Source, file: MultipartFile | undefined): { bound: UploadParams; fileName: string };
function bindForm(headers: IncomingHttpHeaders, query: Source, fields: Source, file: MultipartFile | undefined): { bound: UploadParams; fileName: string } {
  const items: string[] = [];
  let bound: UploadParams | undefined;
  try {
    bound = bindRequest(params, headers, query, fields);
  } catch (error) {
    if (!(error instanceof ApiError) || !error.items) throw error;
    items.push(...error.items);
  }
  const fileName = sanitizeFileName(file?.filename);
  if (!file) items.push(problems.fileRequired);
  else if (!fileName) items.push(problems.badFileName);
  if (items.length > 0 || !bound || !fileName) throw invalidInput(items);
  return { bound, fileName };
}

function tryBind(headers: IncomingHttpHeaders, query: Source, fields: Source): Authorizing | undefined {
  try {
    return bindRequest(authorizing, headers, query, fields);
  } catch {
    return undefined;
  }
}

/**
 * POST /API/UploadFile: one file part plus AccessToken, BucketId and AliveDays from the query
 * string or from form fields before or after the file. The file part streams into the upload flow;
 * the reply waits until the bytes are durable and the row is committed.
 */
export default async function uploadRoutes(fastify: FastifyInstance): Promise<void> {
  const { maxUploadBytes } = fastify.config;
  await fastify.register(multipart, {
    // The file limit is the upload limit: the plugin's default (Fastify's bodyLimit) would truncate.
    limits: { fileSize: maxUploadBytes, files: 1, parts: 1000, fields: 100, fieldSize: 64 * 1024, headerPairs: 100 },
    throwFileSizeLimit: true,
  });

  /** The bucket for a token, reused when the parameters do not change between before and after the file. */
  const authorize = async (bound: Authorizing, fileName: string | undefined): Promise<{ key: string; bucket: UploadBucket }> => {
    return { key: `${bound.AccessToken}\n${bound.BucketId}`, bucket: await authorizeTokenUpload(fastify.db, bound.AccessToken, bound.BucketId, fileName) };
  };

  const receive = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.isMultipart()) throw invalidInput([problems.notMultipart]);
    // Refused before the body is read: the connection closes after the answer, or the unread body
    // would hold it open (paused) until the keep-alive timeout.
    const unread = (error: unknown) => {
      reply.header('connection', 'close');
      return error;
    };
    if (Number(request.headers['content-length']) > maxUploadBytes + FORM_OVERHEAD_BYTES) throw unread(invalid.fileTooLarge(maxUploadBytes));
    await fastify.storage.checkWritable().catch((error: unknown) => {
      throw unread(error);
    });

    const query = request.query as Source;
    const form = new UploadForm(request, maxUploadBytes);
    const file = await form.nextFile();

    let early: { key: string; bucket: UploadBucket } | undefined;
    /** Decided once the bytes are in: the fields after the file are read, bound and authorized. */
    const target = async (): Promise<UploadTarget> => {
      if (file?.file.truncated) throw invalid.fileTooLarge(maxUploadBytes);
      await form.readRest();
      const { bound, fileName } = bindForm(request.headers, query, form.fields, file);
      const { bucket } = early?.key === `${bound.AccessToken}\n${bound.BucketId}` ? early : await authorize(bound, fileName);
      return { ...bucket, fileName, aliveDays: bound.AliveDays };
    };
    if (!file) return bindForm(request.headers, query, form.fields, undefined);

    // Token and bucket already known: a refused upload is answered without storing the body.
    try {
      const bound = tryBind(request.headers, query, form.fields);
      if (bound) early = await authorize(bound, sanitizeFileName(file.filename));
    } catch (error) {
      await drain(file.file);
      throw error;
    }
    try {
      const stored = await storeUpload(contextOf(request), file.file, { maxBytes: maxUploadBytes, lengthAtMost: declaredLength(request.headers), target });
      fastify.metrics.uploadedBytes.inc(stored.size);
      return {
        FileKey: stored.fileKey,
        Path: internetPath(publicBaseUrl(request), stored.bucketName, stored.fileName),
        Code: 0,
        Message: succeeded.fileUploaded,
      };
    } catch (error) {
      // Before the whole body arrived, the error is the client's, the parser's or the store's;
      // after it, the target's or the commit's, which need no translation.
      const duringBody = !file.file.readableEnded;
      await drain(file.file);
      throw duringBody ? uploadError(error, maxUploadBytes) : error;
    }
  };

  /**
   * Uploads still running. A shutdown cuts their connections after its grace period, then waits here
   * before the database closes, so each one either commits its row or removes its bytes.
   */
  const running = new Set<Promise<unknown>>();
  fastify.addHook('onClose', async () => {
    await Promise.allSettled(running);
  });

  fastify.post('/API/UploadFile', { config: { operation: 'UploadFile' }, schema }, (request, reply) => {
    const upload = receive(request, reply);
    running.add(upload);
    fastify.metrics.uploadsInFlight.inc();
    const settled = () => {
      running.delete(upload);
      fastify.metrics.uploadsInFlight.dec();
    };
    upload.then(settled, settled);
    return upload;
  });
}
