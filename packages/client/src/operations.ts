import { boolean, bucketFields, bucketShape, fileShape, id, integer, shape, text, type Fields, type Param, type Shape } from './shapes.js';

/** How an operation authenticates: with the AccessToken (as `Authorization: Bearer`) or not at all. */
export type Auth = 'token' | 'none';

export interface OperationSpec {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly auth: Auth;
  /** The parameters besides the AccessToken, by their names on the wire. */
  readonly params: Readonly<Record<string, Param>>;
  /** The fields of a success answer besides Code and Message. */
  readonly result: Readonly<Record<string, Shape>>;
}

const spec = <P extends Record<string, Param>, R extends Record<string, Shape>>(
  method: 'GET' | 'POST',
  path: string,
  auth: Auth,
  params: P,
  result: R,
) => ({ method, path, auth, params, result }) as const;

/**
 * Every operation of the API the SDK calls, as the service documents it at /docs/json
 * (test/sdk-openapi.test.ts holds them together). A new operation is one entry here and one
 * method of FileStore.
 */
export const OPERATIONS = {
  AccessToken: spec('POST', '/API/AccessToken', 'none', { AppId: text(64), AppSecret: text(512) }, { AccessToken: shape.string, DeadTime: shape.dateTime }),
  DeleteApp: spec('POST', '/API/DeleteApp', 'token', { AppId: text(64) }, {}),
  ViewMyBuckets: spec('GET', '/API/ViewMyBuckets', 'token', {}, { AppId: shape.string, Buckets: shape.array(bucketShape) }),
  CreateBucket: spec('POST', '/API/CreateBucket', 'token', { BucketName: text(), OpenToRead: boolean, OpenToUpload: boolean }, { BucketId: shape.integer }),
  EditBucket: spec('POST', '/API/EditBucket', 'token', { BucketId: id, NewBucketName: text(), OpenToRead: boolean, OpenToUpload: boolean }, {}),
  ViewBucketDetail: spec('GET', '/API/ViewBucketDetail', 'none', { BucketId: id }, bucketFields),
  DeleteBucket: spec('POST', '/API/DeleteBucket', 'token', { BucketId: id }, {}),
  ViewOneFile: spec('GET', '/API/ViewOneFile', 'none', { FileKey: id }, { File: fileShape }),
  ViewMultiFiles: spec('GET', '/API/ViewMultiFiles', 'none', { Ids: text(64 * 1024) }, { Items: shape.array(fileShape) }),
  ViewAllFiles: spec('GET', '/API/ViewAllFiles', 'token', { BucketId: id }, { BucketId: shape.integer, AllFiles: shape.array(fileShape) }),
  DeleteFile: spec('POST', '/API/DeleteFile', 'token', { FileKey: id }, {}),
  /** multipart/form-data with one file part; the parameters go in the query string. */
  UploadFile: spec('POST', '/API/UploadFile', 'token', { BucketId: id, AliveDays: integer(1, 18250) }, { FileKey: shape.integer, Path: shape.string }),
  GenerateSecret: spec('GET', '/Secret/Generate', 'token', { Id: id, MaxUseTimes: integer(1, 1_000_000, false) }, { Value: shape.string }),
} satisfies Record<string, OperationSpec>;

export type OperationName = keyof typeof OPERATIONS;

/** Code and Message, on every answer. */
export interface Envelope {
  Code: number;
  Message: string;
}

/** The success answer of an operation, typed to the wire's fields. */
export type Result<N extends OperationName> = Envelope & Fields<(typeof OPERATIONS)[N]['result']>;

/** The download routes (GET and HEAD), with the query parameters and headers the SDK sends them. */
export const DOWNLOADS = {
  DownloadFromKey: { path: '/Download/FromKey/{key}', query: ['download', 'name'], headers: ['Range', 'If-Range', 'If-None-Match'] },
  DownloadFromPath: { path: '/{bucket}/{file}', query: ['download', 'name'], headers: ['Range', 'If-Range', 'If-None-Match'] },
  DownloadFromSecret: { path: '/Download/FromSecret', query: ['sec', 'download', 'name'], headers: ['Range', 'If-Range', 'If-None-Match'] },
} as const;

/** The tus requests of a resumable upload, with the headers the SDK sends. */
export const RESUMABLE = {
  path: '/API/ResumableUpload',
  create: { method: 'post', headers: ['Tus-Resumable', 'Upload-Length', 'Upload-Metadata'] },
  offset: { method: 'head', headers: ['Tus-Resumable'] },
  bytes: { method: 'patch', headers: ['Tus-Resumable', 'Upload-Offset'] },
  terminate: { method: 'delete', headers: ['Tus-Resumable'] },
} as const;
