import { finished } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import multipart, { type Multipart } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { accessTokenParam } from '../../plugins/auth.js';
import { bindParameters, envelopeResponses, field, MAX_ID, parametersSchema, type Bound, type Source } from '../../plugins/validation.js';
import { ApiError, failure, invalidInput } from '../errors.js';
import { BlobTooLargeError, type IncomingBlob } from '../storage/blob-store.js';
import { sanitizeFileName } from '../services/file-names.js';
import { authorizeUpload, storeUpload, type UploadTarget } from '../services/uploads.js';
import { internetPath } from '../services/files.js';
import { publicBaseUrl } from './public-url.js';

const params = {
  AccessToken: accessTokenParam(),
  BucketId: field.integer({ minimum: 1, maximum: MAX_ID }),
  AliveDays: field.integer({ minimum: 1, maximum: 18250 }),
};
type UploadParams = Bound<typeof params>;
/** What decides whether an upload is refused: known before the file part, no byte is stored. */
const authorizing = { AccessToken: params.AccessToken, BucketId: params.BucketId };
type Authorizing = Bound<typeof authorizing>;

/** Room for the multipart framing and the small fields around the file. */
const FORM_OVERHEAD_BYTES = 1024 * 1024;
export const STORAGE_FULL = 'The storage is full; the file was not stored.';

async function drain(stream: Readable): Promise<void> {
  stream.resume();
  await finished(stream).catch(() => {});
}

function tooLarge(maxBytes: number): ApiError {
  return invalidInput([`The file is larger than the limit of ${maxBytes} bytes.`], 413);
}

/** Errors of the multipart parser, as the client should see them. */
function readError(error: unknown, maxBytes: number): unknown {
  if (error instanceof ApiError) return error;
  if (error instanceof BlobTooLargeError) return tooLarge(maxBytes);
  const code = (error as { code?: string }).code;
  switch (code) {
    case 'ENOSPC':
      return failure(STORAGE_FULL, 507);
    case 'FST_REQ_FILE_TOO_LARGE':
      return tooLarge(maxBytes);
    case 'FST_FILES_LIMIT':
      return invalidInput(['Exactly one file part is allowed.']);
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return invalidInput(['The form has too many parts.'], 413);
    case 'FST_PROTO_VIOLATION':
      return invalidInput(['A form field has a name that is not allowed.']);
    default:
      // Malformed framing, a part cut short, or a client that went away mid-body.
      return invalidInput(['The multipart body could not be read.']);
  }
}

/** Adds a form field; a name given twice becomes a list, which binding reports as ambiguous. */
function addField(fields: Record<string, unknown>, name: string, value: unknown): void {
  const previous = fields[name];
  fields[name] = previous === undefined ? value : [previous, value].flat();
}

/**
 * POST /API/UploadFile: one file part plus AccessToken, BucketId and AliveDays from the query
 * string or from form fields before or after the file. The body streams to a temp file; the reply
 * waits until the bytes are durable in their final place and the row is committed.
 */
export default async function uploadRoutes(fastify: FastifyInstance): Promise<void> {
  const { maxUploadBytes, minFreeDiskBytes } = fastify.config;
  await fastify.register(multipart, {
    // The file limit is the upload limit: the plugin's default (Fastify's bodyLimit) would truncate.
    limits: { fileSize: maxUploadBytes, files: 1, parts: 1000, fields: 100, fieldSize: 64 * 1024, headerPairs: 100 },
    throwFileSizeLimit: true,
  });

  /** Authorizes once the parameters are known; the result is reused if they do not change. */
  const authorize = async (bound: Authorizing, fileName: string | undefined): Promise<{ key: string; target: UploadTarget }> => {
    const appId = await fastify.appForToken(bound.AccessToken);
    return { key: `${bound.AccessToken}\n${bound.BucketId}`, target: await authorizeUpload(fastify.db, appId, bound.BucketId, fileName) };
  };

  const receiveUpload = async (request: FastifyRequest) => {
    if (!request.isMultipart()) {
      throw invalidInput(['The request must be multipart/form-data with one file part.']);
    }
    if (Number(request.headers['content-length']) > maxUploadBytes + FORM_OVERHEAD_BYTES) throw tooLarge(maxUploadBytes);
    if ((await fastify.storage.freeBytes()) < minFreeDiskBytes) throw failure(STORAGE_FULL, 507);

    const query = request.query as Source;
    const fields: Record<string, unknown> = Object.create(null);
    let blob: IncomingBlob | undefined;
    let fileParts = 0;
    let clientName: string | undefined;
    let early: { key: string; target: UploadTarget } | undefined;
    let refusal: unknown;

    try {
      const parts = request.parts();
      for (;;) {
        let next: IteratorResult<Multipart>;
        try {
          next = await parts.next();
        } catch (error) {
          throw readError(error, maxUploadBytes);
        }
        if (next.done) break;
        const part = next.value;
        if (part.type === 'field') {
          // A value cut at the field size limit is still far past any parameter's own limit.
          addField(fields, part.fieldname, part.value);
          continue;
        }
        fileParts += 1;
        if (refusal !== undefined || fileParts > 1) {
          await drain(part.file);
          continue;
        }
        clientName = part.filename;
        // Token and bucket already known: a refused upload is answered without storing the body.
        try {
          const bound = tryBind(query, fields);
          if (bound) {
            early = await authorize(bound, sanitizeFileName(clientName));
          }
        } catch (error) {
          refusal = error;
          await drain(part.file);
          continue;
        }
        try {
          blob = await fastify.storage.receive(part.file, { maxBytes: maxUploadBytes });
        } catch (error) {
          await drain(part.file);
          throw readError(error, maxUploadBytes);
        }
        if (part.file.truncated) throw tooLarge(maxUploadBytes);
      }
      if (refusal !== undefined) throw refusal;

      const items: string[] = [];
      let bound: UploadParams | undefined;
      try {
        bound = bindParameters(params, query, fields);
      } catch (error) {
        if (!(error instanceof ApiError) || !error.items) throw error;
        items.push(...error.items);
      }
      const fileName = sanitizeFileName(clientName);
      if (fileParts === 0) items.push('The File field is required: send exactly one file part.');
      else if (!fileName) items.push('The file name is empty or not valid.');
      if (items.length > 0 || !bound || !blob || !fileName) throw invalidInput(items);

      const { target } = early && early.key === `${bound.AccessToken}\n${bound.BucketId}` ? early : await authorize(bound, fileName);
      const stored = await storeUpload(fastify.db, (keys) => fastify.dropBlobs(keys, request.log), { target, blob, fileName, aliveDays: bound.AliveDays });
      fastify.metrics.uploadedBytes.inc(blob.size);
      blob = undefined;
      return {
        FileKey: stored.fileKey,
        Path: internetPath(publicBaseUrl(request), stored.bucketName, stored.fileName),
        Code: 0,
        Message: 'Successfully uploaded your file.',
      };
    } finally {
      // Anything not handed over to a committed row leaves no bytes behind.
      await blob?.discard();
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

  const schema = {
    summary: 'Upload one file into a bucket; its bytes stream to disk.',
    description: 'AccessToken, BucketId and AliveDays come from the query string, as real clients send them, or as form fields before or after the file part.',
    tags: ['Files'],
    querystring: parametersSchema(params),
    body: {
      content: {
        'multipart/form-data': {
          schema: parametersSchema({}, { File: { type: 'string', format: 'binary', description: 'Exactly one file part, under any field name.' } }),
        },
      },
    },
    response: envelopeResponses({ FileKey: { type: 'integer' }, Path: { type: 'string', description: 'The InternetPath of the file.' } }),
  };

  fastify.post('/API/UploadFile', { config: { operation: 'UploadFile' }, schema }, (request) => {
    const upload = receiveUpload(request);
    running.add(upload);
    fastify.metrics.uploadsInFlight.inc();
    const settled = () => {
      running.delete(upload);
      fastify.metrics.uploadsInFlight.dec();
    };
    upload.then(settled, settled);
    return upload;
  });

  function tryBind(query: Source, fields: Source): Authorizing | undefined {
    try {
      return bindParameters(authorizing, query, fields);
    } catch {
      return undefined;
    }
  }
}
