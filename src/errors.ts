/**
 * The catalogue: every Code and Message the service answers is written here and nowhere else.
 * Protocol outcomes (0, and refusals with -1 or -10) travel with HTTP 200, as the original clients
 * expect; transport-level outcomes (404, 413, 415, 429, 500, 503, 507…) carry their own status.
 */

export interface Envelope {
  Code: number;
  Message: string;
  Items?: readonly string[];
  [field: string]: unknown;
}

/** The only Message a validation failure carries; the details go in Items. */
export const VALIDATION_MESSAGE = 'Your input contains several errors!';

/**
 * What a refusal is, whatever its Message: an entry point that answers with other statuses (tus,
 * the S3 API) decides by kind, never by comparing texts.
 */
export type RefusalKind =
  | 'invalid'
  | 'unauthorized'
  | 'forbidden'
  | 'not-found'
  | 'gone'
  | 'conflict'
  | 'locked'
  | 'precondition'
  | 'range'
  | 'rate-limited'
  | 'full'
  | 'unavailable'
  | 'aborted'
  | 'fault';

/** A refusal the client should see: Code -1 (general failure) or -10 (validation failure). */
export class ApiError extends Error {
  constructor(
    readonly code: -1 | -10,
    readonly kind: RefusalKind,
    message: string,
    readonly statusCode = 200,
    readonly items?: readonly string[],
    /** Headers the answer must carry, e.g. Retry-After or Content-Range. */
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get envelope(): Envelope {
    return this.items ? { Code: this.code, Message: this.message, Items: this.items } : { Code: this.code, Message: this.message };
  }

  /** The same refusal with another HTTP status (and the same kind, Message and Items). */
  withStatus(statusCode: number): ApiError {
    return new ApiError(this.code, this.kind, this.message, statusCode, this.items, this.headers);
  }
}

function failure(kind: RefusalKind, message: string, statusCode = 200, headers?: Record<string, string>): ApiError {
  return new ApiError(-1, kind, message, statusCode, undefined, headers);
}

export function invalidInput(items: readonly string[], statusCode = 200): ApiError {
  return new ApiError(-10, 'invalid', VALIDATION_MESSAGE, statusCode, items);
}

/** Messages of Code 0. */
export const succeeded = {
  welcome: 'Welcome to the bucket file storage service. The API lives under /API/.',
  alive: 'The process is up.',
  ready: 'Ready.',
  accessToken: 'Successfully get access token.',
  appCreated: 'Successfully created the app.',
  appDeleted: 'Successfully deleted that app and all files.',
  bucketCreated: 'Successfully created your bucket!',
  bucketEdited: 'Successfully edited your bucket!',
  bucketDetail: 'Successfully get your bucket detail!',
  bucketDeleted: 'Successfully deleted your bucket!',
  buckets: 'Successfully get your buckets!',
  fileUploaded: 'Successfully uploaded your file.',
  file: 'Successfully get that file.',
  files: 'Successfully get those files.',
  allFiles: 'Successfully get all files.',
  fileDeleted: 'Successfully deleted your file!',
  secretGenerated: 'Successfully generated a download secret.',
} as const;

/** Refusals with Code -1, each with its kind and HTTP status. */
export const refused = {
  invalidToken: () => failure('unauthorized', 'Invalid or expired AccessToken.'),
  wrongAppSecret: () => failure('unauthorized', 'The AppId and AppSecret do not match any app.'),
  notYourApp: () => failure('forbidden', 'You can only delete your own app.'),
  unknownApp: () => failure('not-found', 'Could not find that app.'),
  adminKeyRequired: () => failure('unauthorized', 'A valid admin key is required.', 401, { 'WWW-Authenticate': 'Bearer' }),
  metricsTokenRequired: () => failure('unauthorized', 'A valid metrics token is required.', 401, { 'WWW-Authenticate': 'Bearer' }),
  unknownBucket: () => failure('not-found', 'Could not find that bucket.'),
  notYourBucket: () => failure('forbidden', 'This is not your bucket!'),
  bucketNameTaken: () => failure('conflict', 'There is one bucket already called that name!'),
  uploadNotAllowed: () => failure('forbidden', 'You may not upload into this bucket.'),
  fileNameTaken: () => failure('conflict', 'There already exists a file with that name.'),
  fileNotFound: () => failure('not-found', 'Could not find that file.'),
  /** A download path that names no servable file. */
  downloadNotFound: () => failure('not-found', 'Could not find that file.', 404),
  rangeNotSatisfiable: (size: number) => failure('range', 'The requested range is not within the file.', 416, { 'Content-Range': `bytes */${size}` }),
  preconditionFailed: () => failure('precondition', 'The file does not match the request’s precondition.', 412),
  noSuchOperation: (method: string, path: string) => failure('not-found', `There is no ${method} operation at ${path.slice(0, 200)}.`, 404),
  tooManyRequests: (retryAfterSeconds?: number) =>
    retryAfterSeconds === undefined
      ? failure('rate-limited', 'Too many requests; slow down.', 429)
      : failure('rate-limited', `Too many requests; try again in ${retryAfterSeconds} seconds.`, 429, { 'Retry-After': String(retryAfterSeconds) }),
  /** Per-app admission of heavy work: the app's own requests hold all its turns and its queue. */
  appBusy: (retryAfterSeconds: number) =>
    failure('rate-limited', `This app has too many requests in progress on this instance; try again in ${retryAfterSeconds} seconds.`, 429, { 'Retry-After': String(retryAfterSeconds) }),
  /** The client closed the connection while its request waited; no one reads it (499, as nginx counts such requests). */
  clientGone: () => failure('aborted', 'The client closed the connection before the request was served.', 499),
  storageFull: () => failure('full', 'The storage is full; the file was not stored.', 507),
  storageUnavailable: (retryAfterSeconds: number) =>
    failure('unavailable', 'The storage is unreachable right now; try again shortly.', 503, { 'Retry-After': String(retryAfterSeconds) }),
  databaseUnavailable: () => failure('unavailable', 'The database is unreachable right now; try again shortly.', 503),
  overloaded: () => failure('unavailable', 'The service is overloaded right now; try again shortly.', 503),
  imagesBusy: (retryAfterSeconds: number) =>
    failure('unavailable', 'Too many images are being resized right now; try again shortly.', 503, { 'Retry-After': String(retryAfterSeconds) }),
  shuttingDown: () => failure('unavailable', 'The service is shutting down; send the request again.', 503, { Connection: 'close' }),
  notReady: (problems: readonly string[]) => failure('unavailable', `Not ready: ${problems.join('; ')}.`, 503),
  unexpected: (reference: string) => failure('fault', `An unexpected error occurred; quote reference ${reference} when reporting it.`, 500),
};

const shown = (raw: string) => {
  // Echo a short, printable form of the value: enough to recognise it, never a wall of text.
  const printable = raw.replace(/[\p{Cc}\p{Cf}]/gu, '').slice(0, 40);
  return `${printable}${raw.length > 40 ? '…' : ''}`;
};

/** The texts of Items, one per invalid input, in the words the original clients know. */
export const problems = {
  required: (name: string) => `The ${name} field is required.`,
  notValid: (raw: string, name: string) => `The value '${shown(raw)}' is not valid for ${name}.`,
  outOfRange: (name: string, minimum: number, maximum: number) => `The field ${name} must be between ${minimum} and ${maximum}.`,
  tooLong: (name: string, maxLength: number) => `The field ${name} must be a string with a maximum length of ${maxLength}.`,
  givenTwice: (name: string) => `The ${name} field was given more than once.`,
  givenTwiceDifferently: (name: string) => `The ${name} is given twice with different values.`,
  notText: (name: string) => `The ${name} field must be text.`,
  bucketNameLength: (name: string) => `The field ${name} must be 5 to 25 characters long.`,
  bucketNameCharacters: (name: string) =>
    `The field ${name} may contain only letters, digits, '.', '_' and '-', and must start with a letter or digit.`,
  bucketNameReserved: (name: string, value: string) => `The ${name} '${value}' is reserved.`,
  oneOf: (name: string, values: readonly string[]) => `The field ${name} must be one of ${values.join(', ')}.`,
  tooManyIds: (max: number) => `The field Ids may list at most ${max} FileKeys.`,
  badIdInIds: (entry: string) => `The value '${entry.slice(0, 40)}' is not a valid FileKey in Ids.`,
  notMultipart: 'The request must be multipart/form-data with one file part.',
  fileRequired: 'The File field is required: send exactly one file part.',
  oneFilePart: 'Exactly one file part is allowed.',
  badFileName: 'The file name is empty or not valid.',
  fileTooLarge: (maxBytes: number) => `The file is larger than the limit of ${maxBytes} bytes.`,
  tooManyParts: 'The form has too many parts.',
  badFieldName: 'A form field has a name that is not allowed.',
  unreadableMultipart: 'The multipart body could not be read.',
  bodyTooLarge: 'The request body is larger than the service accepts.',
  unsupportedBody: 'The request body must be application/x-www-form-urlencoded or application/json (multipart/form-data for UploadFile).',
  jsonNotObject: 'The JSON body must be one object of the operation’s fields.',
  unreadableBody: (detail: string) => `The request could not be read: ${detail}`,
  badPercentEncoding: 'The request path is not valid percent-encoding.',
  unreadableHttp: 'The HTTP request could not be read.',
  // What Node's HTTP parser found wrong with a request, before any operation saw it.
  badRequestLine: 'The request line could not be read: it must be a method, a path without spaces or control characters, and HTTP/1.1, ending with CR LF.',
  headerLineBreak:
    "A header line could not be read: a header's value may not contain a line break, and each line must end with CR LF (base64 in Upload-Metadata must not wrap).",
  badHeaderLine:
    "A header line could not be read: each must be a name (letters, digits and !#$%&'*+-.^_`|~), a colon, and a value without control characters or line breaks (base64 in Upload-Metadata must not wrap).",
  badContentLength: 'The Content-Length header could not be read: it must be one whole number, given once, and never with Transfer-Encoding.',
  badTransferEncoding: 'The Transfer-Encoding header could not be read: only chunked is accepted, as the last coding, and never with Content-Length.',
  headersTooLarge: 'The request headers are larger than the service accepts.',
  headersTimeout: 'The request headers did not arrive in time.',
} as const;

/** Validation refusals that are not about one parameter's value. */
export const invalid = {
  fileTooLarge: (maxBytes: number) => invalidInput([problems.fileTooLarge(maxBytes)], 413),
  bodyTooLarge: () => invalidInput([problems.bodyTooLarge], 413),
  unsupportedBody: () => invalidInput([problems.unsupportedBody], 415),
  jsonNotObject: () => invalidInput([problems.jsonNotObject], 400),
  unreadableBody: (detail: string) => invalidInput([problems.unreadableBody(detail)], 400),
  badPercentEncoding: () => invalidInput([problems.badPercentEncoding], 400),
};

/** Resumable uploads (tus): the texts of their refusals, beside the shared ones above. */
export const resumableProblems = {
  uploadLengthRequired: 'The Upload-Length header is required: the size of the file, in bytes.',
  deferredLength: 'Upload-Defer-Length is not supported: send Upload-Length.',
  badUploadLength: (raw: string) => `The value '${shown(raw)}' is not valid for Upload-Length.`,
  badUploadOffset: (raw: string) => `The value '${shown(raw)}' is not valid for Upload-Offset.`,
  uploadOffsetRequired: 'The Upload-Offset header is required: the offset the bytes of the PATCH start at.',
  badMetadata: 'The Upload-Metadata header is not valid: comma-separated keys, each with a base64 value.',
  filenameRequired: 'The filename field of Upload-Metadata is required.',
  patchContentType: 'A PATCH must have Content-Type: application/offset+octet-stream.',
  tooLong: 'The request carries more bytes than the upload has left.',
} as const;

/** Refusals of resumable uploads, each with its tus status. */
export const resumableRefused = {
  tusResumableRequired: () => failure('precondition', 'The Tus-Resumable header is required; this server speaks tus 1.0.0.', 412, { 'Tus-Version': '1.0.0' }),
  notFound: () => failure('not-found', 'Could not find that upload.', 404),
  gone: () => failure('gone', 'That upload has expired.', 410),
  offsetConflict: () => failure('conflict', 'Upload-Offset does not match the upload’s current offset; ask with HEAD and resume from there.', 409),
  locked: () => failure('locked', 'The upload is being written by another request; try again shortly.', 423),
  tooLong: () => invalidInput([resumableProblems.tooLong], 413),
  patchContentType: () => invalidInput([resumableProblems.patchContentType], 415),
};
