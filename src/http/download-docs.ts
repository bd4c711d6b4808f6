import { imageParams } from './image-request.js';
import { parametersSchema, type JsonSchema } from './operation.js';

/**
 * /docs of the download routes: what a client may send (path, query, validators and Range) and
 * the answers with their headers. Downloads answer bytes, and the JSON envelope only for refusals.
 */

const header = (description: string, example?: string): JsonSchema => ({ type: 'string', description, ...(example ? { examples: [example] } : {}) });

/** Request headers every download route honours. */
const requestHeaders: JsonSchema = {
  type: 'object',
  properties: {
    Range: header('One byte range (`bytes=0-1023`, `bytes=1024-`, `bytes=-500`); ranges that stay apart get the whole file.'),
    'If-Range': header('The ETag or Last-Modified of the copy the client holds: the range only if it still matches, else the whole file.'),
    'If-None-Match': header('ETags the client holds: 304 when one matches.'),
    'If-Modified-Since': header('304 when the file has not changed since.'),
    'If-Match': header('412 unless the ETag matches.'),
    'If-Unmodified-Since': header('412 when the file changed since.'),
  },
};

/** `download`, `sd` and `name`, taken by every download route. */
const presentation: Record<string, JsonSchema> = {
  download: header('Any non-empty value: Content-Disposition: attachment.', '1'),
  sd: header('Same as `download`.'),
  name: header('Another file name for Content-Disposition.', 'beach.jpg'),
};

/** The image options (w, h, fit, square, format, q), taken by every download route. */
const imageOptions = (parametersSchema(imageParams) as { properties: Record<string, JsonSchema> }).properties;

const body = (description: string) => ({ description, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } });
const responseHeader = (description: string) => ({ type: 'string', description });
const fileHeaders = {
  ETag: responseHeader('Strong, from the content’s sha256.'),
  'Last-Modified': responseHeader('The upload time.'),
  'Accept-Ranges': responseHeader('bytes'),
  'Content-Length': responseHeader('Bytes in this answer.'),
  'Content-Disposition': responseHeader('inline, or attachment for types that are not safe to show; the file name in RFC 6266/5987 form.'),
};
const envelope = (description: string, example: Record<string, unknown>): JsonSchema => ({
  description,
  content: {
    'application/json': {
      schema: { type: 'object', properties: { Code: { type: 'integer' }, Message: { type: 'string' } }, required: ['Code', 'Message'] },
      example,
    },
  },
});

const responses: Record<string, JsonSchema> = {
  200: { ...body('The whole file.'), headers: fileHeaders },
  206: { ...body('The range asked for.'), headers: { ...fileHeaders, 'Content-Range': responseHeader('`bytes <first>-<last>/<size>`') } },
  304: { description: 'Not modified: the client’s copy (If-None-Match, If-Modified-Since) is current.', type: 'null' },
  404: envelope('Unknown, expired or deleted, or in a bucket that is not OpenToRead (or a used-up secret).', { Code: -1, Message: 'Could not find that file.' }),
  412: envelope('If-Match or If-Unmodified-Since does not hold.', { Code: -1, Message: 'The file does not match the request’s precondition.' }),
  416: envelope('The range is not within the file (Content-Range: bytes */<size>).', { Code: -1, Message: 'The requested range is not within the file.' }),
};

/** The schema of a download route: its operationId, path parameters and its own query parameters. */
export function downloadSchema(operationId: string, summary: string, options: { params?: JsonSchema; query?: Record<string, JsonSchema>; required?: string[] } = {}): JsonSchema {
  return {
    operationId,
    summary,
    tags: ['Downloads'],
    headers: requestHeaders,
    querystring: { type: 'object', properties: { ...options.query, ...presentation, ...imageOptions }, required: options.required ?? [] },
    ...(options.params ? { params: options.params } : {}),
    response: responses,
  };
}
