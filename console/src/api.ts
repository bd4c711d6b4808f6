/** A client of the service's public API: every answer is the JSON envelope, Code 0 on success. */

export interface Bucket {
  BucketId: number;
  BucketName: string;
  OpenToRead: boolean;
  OpenToUpload: boolean;
  FileCount: number;
}

export interface StoredFile {
  FileKey: number;
  RealFileName: string;
  FileExtension: string;
  JFileSize: number;
  DownloadTimes: number;
  BucketId: number;
  UploadTime: string;
  AliveDays: number;
  InternetPath: string;
}

export interface TokenGrant {
  AccessToken: string;
  DeadTime: string;
}

/** A refusal, carrying the envelope's Message and, for invalid input, its Items. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly items: string[] = [],
  ) {
    super(message);
  }
  /** What a person reads: the Message, then each invalid input. */
  get text(): string {
    return this.items.length > 0 ? `${this.message} ${this.items.join(' ')}` : this.message;
  }
}

export const EXPIRED_TOKEN_MESSAGE = 'Invalid or expired AccessToken.';

type Fields = Record<string, string | number | boolean>;

async function envelope<T>(response: Response): Promise<T> {
  let body: { Code?: unknown; Message?: unknown; Items?: unknown } | undefined;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(`The service answered ${response.status} ${response.statusText}.`, -1);
  }
  if (body && body.Code === 0) return body as T;
  const message = typeof body?.Message === 'string' ? body.Message : `The service answered ${response.status}.`;
  const items = Array.isArray(body?.Items) ? body.Items.map(String) : [];
  throw new ApiError(message, typeof body?.Code === 'number' ? body.Code : -1, items);
}

async function send<T>(request: () => Promise<Response>): Promise<T> {
  let response: Response;
  try {
    response = await request();
  } catch {
    throw new ApiError('The service cannot be reached. Check the connection and try again.', -1);
  }
  return envelope<T>(response);
}

const form = (fields: Fields) => new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)]));

/** Exchanges an app's credentials for an AccessToken; the body keeps the secret out of URLs. */
export function requestToken(appId: string, appSecret: string): Promise<TokenGrant> {
  return send(() => fetch('/API/AccessToken', { method: 'POST', body: form({ AppId: appId, AppSecret: appSecret }) }));
}

/** The operations that need a token, given one that the session keeps fresh. */
export function operations(token: () => Promise<string>) {
  const authorization = (value: string) => ({ Authorization: `Bearer ${value}` });
  // The token travels only in the Authorization header, never in a URL that proxies could log.
  const get = async <T>(path: string, fields: Fields = {}) => {
    const value = await token();
    return send<T>(() => fetch(`${path}?${form(fields)}`, { headers: authorization(value) }));
  };
  const post = async <T>(path: string, fields: Fields) => {
    const value = await token();
    return send<T>(() => fetch(path, { method: 'POST', headers: authorization(value), body: form(fields) }));
  };
  return {
    listBuckets: () => get<{ AppId: string; Buckets: Bucket[] }>('/API/ViewMyBuckets'),
    createBucket: (name: string, openToRead: boolean, openToUpload: boolean) =>
      post<{ BucketId: number; Message: string }>('/API/CreateBucket', { BucketName: name, OpenToRead: openToRead, OpenToUpload: openToUpload }),
    editBucket: (id: number, name: string, openToRead: boolean, openToUpload: boolean) =>
      post<{ Message: string }>('/API/EditBucket', { BucketId: id, NewBucketName: name, OpenToRead: openToRead, OpenToUpload: openToUpload }),
    deleteBucket: (id: number) => post<{ Message: string }>('/API/DeleteBucket', { BucketId: id }),
    bucketDetail: (id: number) => send<Bucket>(() => fetch(`/API/ViewBucketDetail?${form({ BucketId: id })}`)),
    listFiles: (bucketId: number) => get<{ AllFiles: StoredFile[] }>('/API/ViewAllFiles', { BucketId: bucketId }),
    deleteFile: (fileKey: number) => post<{ Message: string }>('/API/DeleteFile', { FileKey: fileKey }),
    /** A download secret for a file, good for `uses` downloads. */
    shareSecret: (fileKey: number, uses: number) => get<{ Value: string }>('/Secret/Generate', { Id: fileKey, MaxUseTimes: uses }),
  };
}

export type Operations = ReturnType<typeof operations>;

/** Where a download secret is spent. */
export function secretUrl(secret: string): string {
  return `${location.origin}/Download/FromSecret?${form({ sec: secret })}`;
}
