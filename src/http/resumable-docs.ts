import { ACCESS_TOKEN_SCHEME, type JsonSchema } from './operation.js';
import { exampleBaseUrl } from './examples.js';

/**
 * /docs of the resumable uploads (tus 1.0.0, contract section 11), one description per request:
 * the routes share one handler, so their route schema cannot say what each request does.
 */

const UPLOAD_URL = `${exampleBaseUrl}/API/ResumableUpload/0b6f4c1e9a2d4e7f8c3b5a6d7e8f9012`;
const string = (description: string, example?: string | number): JsonSchema => ({ description, schema: { type: 'string' }, ...(example !== undefined ? { example: String(example) } : {}) });
const requestHeader = (name: string, description: string, required: boolean, example?: string | number): JsonSchema => ({
  in: 'header',
  name,
  required,
  ...string(description, example),
});
const tusResumable = requestHeader('Tus-Resumable', 'The protocol version: 1.0.0 (412 without it).', true, '1.0.0');
const idParameter: JsonSchema = { in: 'path', name: 'id', required: true, description: 'The upload, as its Location gave it.', schema: { type: 'string' }, example: '0b6f4c1e9a2d4e7f8c3b5a6d7e8f9012' };

const envelope = (description: string, example: Record<string, unknown>, headers: Record<string, JsonSchema> = {}): JsonSchema => ({
  description,
  headers,
  content: {
    'application/json': {
      schema: {
        type: 'object',
        properties: { Code: { type: 'integer' }, Message: { type: 'string' }, Items: { type: 'array', items: { type: 'string' } } },
        required: ['Code', 'Message'],
      },
      example,
    },
  },
});
const invalid = (item: string) => ({ Code: -10, Message: 'Your input contains several errors!', Items: [item] });
const expires = { 'Upload-Expires': string('When the incomplete upload is removed (RFC 9110 date).', 'Fri, 21 Nov 2026 10:04:05 GMT') };
const completed = {
  'Upload-File-Key': string('The FileKey of the file, on the answer that completed the upload.', 7),
  'Upload-File-Path': string('Its InternetPath.', `${exampleBaseUrl}/holiday-photos/big%20video.mp4`),
};
const offset = { 'Upload-Offset': string('Bytes the service holds, durably.', 16777216) };
const missing = envelope('Unknown upload (410 while the service still remembers an expired one).', { Code: -1, Message: 'Could not find that upload.' });
const noVersion = envelope('Tus-Resumable is missing.', { Code: -1, Message: 'The Tus-Resumable header is required; this server speaks tus 1.0.0.' });
const operation = (operationId: string, summary: string, description: string, rest: JsonSchema): JsonSchema => ({
  operationId,
  summary,
  description,
  tags: ['Resumable uploads'],
  ...rest,
});

const options = (operationId: string, summary: string): JsonSchema =>
  operation(operationId, summary, 'Answers the version, the extensions and the largest upload (also a CORS preflight).', {
    responses: {
      204: {
        description: 'The capabilities.',
        headers: {
          'Tus-Version': string('1.0.0'),
          'Tus-Extension': string('creation,creation-with-upload,termination,expiration'),
          'Tus-Max-Size': string('MAX_UPLOAD_BYTES.', 10737418240),
        },
      },
    },
  });

export const resumablePaths: Record<string, Record<string, JsonSchema>> = {
  '/API/ResumableUpload': {
    options: options('ResumableUploadOptions', 'What the tus endpoint supports.'),
    post: operation(
      'CreateResumableUpload',
      'Create a resumable upload.',
      'Checked like UploadFile before any byte is accepted. Upload-Metadata carries comma-separated `key base64(value)` pairs: ' +
        '`filename`, `BucketId` and `AliveDays` (keys in any case; `AccessToken` there instead of the header is accepted). ' +
        'With creation-with-upload the body may carry the first bytes (Content-Type: application/offset+octet-stream).',
      {
        security: [{ [ACCESS_TOKEN_SCHEME]: [] }],
        parameters: [
          tusResumable,
          requestHeader('Upload-Length', 'The size of the file in bytes (a deferred length is refused).', true, 73400320),
          requestHeader('Upload-Metadata', 'filename, BucketId and AliveDays, each value base64.', true, 'filename YmlnIHZpZGVvLm1wNA==,BucketId MQ==,AliveDays MzA='),
        ],
        responses: {
          201: { description: 'Created; the upload lives at Location.', headers: { Location: string('The upload URL: the capability for HEAD, PATCH and DELETE.', UPLOAD_URL), ...expires, ...offset, ...completed } },
          400: envelope('Invalid input: a missing token, length or metadata field, metadata that is not base64, a deferred length.', invalid('The filename field of Upload-Metadata is required.')),
          403: envelope('A bad token, or no permission to upload into the bucket.', { Code: -1, Message: 'You may not upload into this bucket.' }),
          409: envelope('A live file of that name is in the bucket.', { Code: -1, Message: 'There already exists a file with that name.' }),
          412: noVersion,
          413: envelope('Larger than MAX_UPLOAD_BYTES.', invalid('The file is larger than the limit of 10737418240 bytes.')),
        },
      },
    ),
  },
  '/API/ResumableUpload/{id}': {
    head: operation('ResumableUploadOffset', 'How much of an upload the service holds.', 'Resume a PATCH from the Upload-Offset it answers.', {
      parameters: [idParameter, tusResumable],
      responses: {
        200: { description: 'The offset and length.', headers: { ...offset, 'Upload-Length': string('The size of the file.', 73400320), ...expires, 'Cache-Control': string('no-store') } },
        404: missing,
        412: noVersion,
      },
    }),
    patch: operation(
      'ResumableUploadBytes',
      'Send the next bytes of an upload.',
      'Upload-Offset must equal the offset the service holds. The request that delivers the last byte commits the file, as UploadFile does, before it is answered.',
      {
        parameters: [idParameter, tusResumable, requestHeader('Upload-Offset', 'Where these bytes start.', true, 16777216)],
        requestBody: { required: true, content: { 'application/offset+octet-stream': { schema: { type: 'string', format: 'binary' } } } },
        responses: {
          204: { description: 'Received and durable; the last one carries the FileKey.', headers: { ...offset, ...expires, ...completed } },
          404: missing,
          409: envelope('Upload-Offset is not the service’s, or, on the last bytes, the name was taken meanwhile.', {
            Code: -1,
            Message: 'Upload-Offset does not match the upload’s current offset; ask with HEAD and resume from there.',
          }),
          412: noVersion,
          415: envelope('Another Content-Type.', invalid('A PATCH must have Content-Type: application/offset+octet-stream.')),
          423: envelope('Another request is writing this upload.', { Code: -1, Message: 'The upload is being written by another request; try again shortly.' }),
        },
      },
    ),
    delete: operation('ResumableUploadTerminate', 'Give an upload up.', 'Its bytes and state are removed.', {
      parameters: [idParameter, tusResumable],
      responses: { 204: { description: 'Terminated.' }, 404: missing, 412: noVersion },
    }),
    options: options('ResumableUploadUrlOptions', 'What the tus endpoint supports, asked at an upload’s URL.'),
  },
};
