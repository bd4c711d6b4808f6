import type { IncomingHttpHeaders } from 'node:http';
import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalid, invalidInput, problems, succeeded } from '../errors.js';
import { sanitizeFileName } from '../services/file-names.js';
import { authorizeTokenUpload, storeUpload, type UploadBucket, type UploadTarget } from '../services/uploads.js';
import { admitHeavy } from './admission.js';
import { param, tryBindRequest, type Bound, type Source } from './binding.js';
import { contextOf } from './context.js';
import { exampleBaseUrl } from './examples.js';
import { envelopeResponses, parametersSchema, tokenSecurity } from './operation.js';
import { publicBaseUrl } from './public-url.js';
import { internetPath } from './views.js';
import { awaitsContinue, continueBody } from './unread-bodies.js';
import { drain, uploadError, UploadForm } from './upload-form.js';

const params = param.upload();
type UploadParams = Bound<typeof params>;
/** What decides whether an upload is refused: known before the file part, no byte is stored. */
const authorizing = { AccessToken: params.AccessToken, BucketId: params.BucketId };
type Authorizing = Bound<typeof authorizing>;

/** The body's Content-Length, when it has one: no file in the form can be longer. */
function declaredLength(headers: IncomingHttpHeaders): number | undefined {
  const length = Number(headers['content-length'] ?? NaN);
  return Number.isSafeInteger(length) ? length : undefined;
}

const keyOf = (bound: Authorizing) => `${bound.AccessToken}\n${bound.BucketId}`;

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

/** Binds the form's fields and checks its file name, reporting every problem at once. */
function bindForm(headers: IncomingHttpHeaders, query: Source, fields: Source, file: undefined): never;
function bindForm(headers: IncomingHttpHeaders, query: Source, fields: Source, file: MultipartFile | undefined): { bound: UploadParams; fileName: string };
function bindForm(headers: IncomingHttpHeaders, query: Source, fields: Source, file: MultipartFile | undefined): { bound: UploadParams; fileName: string } {
  const binding = tryBindRequest(params, headers, query, fields);
  const items = binding.ok ? [] : [...binding.items];
  const fileName = sanitizeFileName(file?.filename);
  if (!file) items.push(problems.fileRequired);
  else if (!fileName) items.push(problems.badFileName);
  if (!binding.ok || !fileName) throw invalidInput(items);
  return { bound: binding.value, fileName };
}

/**
 * What the parameters known so far decide: `refused` when no later field can mend them (a value
 * that is invalid or given twice); the token and bucket when they are complete; else nothing yet.
 */
function earlyBinding(headers: IncomingHttpHeaders, query: Source, fields: Source): 'refused' | Authorizing | undefined {
  const binding = tryBindRequest(params, headers, query, fields);
  if (!binding.ok && !binding.onlyMissing) return 'refused';
  const authorizes = tryBindRequest(authorizing, headers, query, fields);
  return authorizes.ok ? authorizes.value : undefined;
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
  const authorize = async (bound: Authorizing, fileName: string | undefined): Promise<{ key: string; bucket: UploadBucket & { appId: string } }> => {
    return { key: keyOf(bound), bucket: await authorizeTokenUpload(fastify.db, bound.AccessToken, bound.BucketId, fileName) };
  };

  const receive = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.isMultipart()) throw invalidInput([problems.notMultipart]);
    // Refusals before the body is read: the unread body is dealt with by the unread-bodies plugin.
    if (Number(request.headers['content-length']) > maxUploadBytes + FORM_OVERHEAD_BYTES) throw invalid.fileTooLarge(maxUploadBytes);
    await fastify.storage.checkWritable();
    const query = request.query as Source;
    // A client waiting for 100 Continue has not sent its body yet: the query alone is judged first,
    // so a refused upload is never sent. Other clients send it anyway, and it is judged, the name
    // included, in one query at the file part.
    if (awaitsContinue(request)) {
      const known = earlyBinding(request.headers, query, undefined);
      if (known !== undefined && known !== 'refused') await authorize(known, undefined);
    }
    continueBody(request);

    const form = new UploadForm(request, maxUploadBytes);
    const file = await form.nextFile();
    if (!file) return bindForm(request.headers, query, form.fields, undefined);

    let early: { key: string; bucket: UploadBucket & { appId: string } } | undefined;
    /** Decided once the bytes are in: the fields after the file are read, bound and authorized. */
    const target = async (): Promise<UploadTarget> => {
      if (file.file.truncated) throw invalid.fileTooLarge(maxUploadBytes);
      await form.readRest();
      const { bound, fileName } = bindForm(request.headers, query, form.fields, file);
      const { bucket } = early?.key === keyOf(bound) ? early : await authorize(bound, fileName);
      return { ...bucket, fileName, aliveDays: bound.AliveDays };
    };

    // Refused already: the file is not stored, and the answer waits for every field, so that it
    // reports every invalid input (or, with none, the refusal).
    const refuseAfterForm = async (refusal: unknown): Promise<never> => {
      await drain(file.file);
      await form.readRest();
      bindForm(request.headers, query, form.fields, file);
      throw refusal;
    };
    const known = earlyBinding(request.headers, query, form.fields);
    if (known === 'refused') return refuseAfterForm(undefined);
    if (known !== undefined) early = await authorize(known, sanitizeFileName(file.filename)).catch(refuseAfterForm);
    // The app is known before its bytes: it takes its turn at uploads first (a token after the file
    // comes with bytes already received, and nothing is left to spare).
    if (early) await admitHeavy(request, reply, early.bucket.appId, 'uploads');
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

  fastify.post('/API/UploadFile', { config: { operation: 'UploadFile', readsBodyItself: true }, schema }, (request, reply) => {
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
