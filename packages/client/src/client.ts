import { wholeBodies, type BodySender } from './bodies.js';
import type { CallOptions, ClientContext } from './context.js';
import { download, type Download, type DownloadOptions } from './downloads.js';
import { EXPIRED_TOKEN_MESSAGE, FileStoreError, invalidArguments, problems } from './errors.js';
import { listFiles } from './listing.js';
import { OPERATIONS, type OperationName, type Result } from './operations.js';
import { checkParams, queryOf, type Value } from './params.js';
import { id } from './shapes.js';
import type { PathOpener, UploadSource } from './sources.js';
import { Tokens, type TokenOptions } from './tokens.js';
import { envelope, send, type RetryOptions, type Transport } from './transport.js';
import { terminateUpload, uploadOffset } from './tus.js';
import type { StoredFile } from './types.js';
import { uploadFile, type UploadOptions } from './uploads.js';

const MiB = 1024 * 1024;

export interface FileStoreOptions extends TokenOptions {
  /** The service's base URL, e.g. `https://files.example.com` (in a browser on the same origin: `location.origin`). */
  url: string | URL;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  retry?: RetryOptions;
  /** Files of a known size of at least this many bytes are uploaded resumably (default 8 MiB). */
  resumableThreshold?: number;
  /** Bytes per request of a resumable upload (default 16 MiB): a broken connection loses at most that much. */
  chunkSize?: number;
}

/** What the platform's entry point gives the client (see node.ts). */
export interface Platform {
  openPath?: PathOpener;
  bodies?: BodySender;
}

type Options = CallOptions;

/**
 * A client of the bucket file storage service. With `appId` and `appSecret` it gets its
 * AccessToken itself and renews it before its DeadTime (and once more if the service refuses it);
 * with `accessToken` it uses that one. Every method takes an AbortSignal; failures are
 * FileStoreErrors with the service's Code, Message, Items and HTTP status.
 */
export class FileStore {
  readonly #ctx: ClientContext;

  constructor(options: FileStoreOptions, platform: Platform = {}) {
    const baseUrl = new URL(options.url);
    if (!baseUrl.pathname.endsWith('/')) baseUrl.pathname += '/';
    const transport: Transport = {
      baseUrl,
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      retry: { retries: 4, baseDelayMs: 250, maxDelayMs: 30_000, ...options.retry },
    };
    this.#ctx = {
      transport,
      tokens: new Tokens(transport, options),
      // XMLHttpRequest reports upload progress in browsers; a fetch of the caller's own is used as given.
      bodies: platform.bodies ?? wholeBodies(options.fetch === undefined),
      openPath: platform.openPath,
      resumableThreshold: options.resumableThreshold ?? 8 * MiB,
      chunkSize: options.chunkSize ?? 16 * MiB,
    };
  }

  /** The service's base URL. */
  get url(): string {
    return this.#ctx.transport.baseUrl.href;
  }

  /** An AccessToken that is not about to expire (got or renewed when needed). */
  token(options: Options = {}): Promise<string> {
    return this.#ctx.tokens.get(options.signal);
  }

  /** One operation: arguments checked, the token sent as `Authorization: Bearer`, JSON in and out. */
  async #call<N extends OperationName>(name: N, values: Record<string, Value>, options: Options = {}): Promise<Result<N>> {
    const spec = OPERATIONS[name];
    checkParams(spec.params, values);
    const { transport, tokens } = this.#ctx;
    const url = new URL(spec.path.slice(1), transport.baseUrl);
    if (spec.method === 'GET') url.search = queryOf(values).toString();
    for (let renewed = false; ; renewed = true) {
      const token = spec.auth === 'token' ? await tokens.get(options.signal) : undefined;
      const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
      const init = (): RequestInit =>
        spec.method === 'GET'
          ? { method: 'GET', headers }
          : { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(values) };
      const response = await send(transport, url, init, { signal: options.signal, idempotent: spec.method === 'GET' });
      try {
        return await envelope<Result<N>>(response);
      } catch (error) {
        // A token that died early (its app's clock, a restart of the service's keys): once more with a new one.
        const retry = token && !renewed && error instanceof FileStoreError && error.message === EXPIRED_TOKEN_MESSAGE && tokens.canRenew;
        if (!retry) throw error;
        tokens.refused(token);
      }
    }
  }

  /** POST /API/AccessToken: a new token for the client's app, which the client then uses (it renews its own without this). */
  accessToken(options: Options = {}): Promise<Result<'AccessToken'>> {
    return this.#ctx.tokens.renew(options.signal);
  }

  deleteApp(appId: string, options?: Options) {
    return this.#call('DeleteApp', { AppId: appId }, options);
  }

  viewMyBuckets(options?: Options) {
    return this.#call('ViewMyBuckets', {}, options);
  }

  createBucket(bucketName: string, flags: { openToRead?: boolean; openToUpload?: boolean } & Options = {}) {
    return this.#call('CreateBucket', { BucketName: bucketName, OpenToRead: flags.openToRead ?? false, OpenToUpload: flags.openToUpload ?? false }, flags);
  }

  /** Replaces the bucket's name and both flags (a name may stay as it is). */
  editBucket(bucketId: number, settings: { newBucketName: string; openToRead: boolean; openToUpload: boolean } & Options) {
    return this.#call('EditBucket', { BucketId: bucketId, NewBucketName: settings.newBucketName, OpenToRead: settings.openToRead, OpenToUpload: settings.openToUpload }, settings);
  }

  viewBucketDetail(bucketId: number, options?: Options) {
    return this.#call('ViewBucketDetail', { BucketId: bucketId }, options);
  }

  deleteBucket(bucketId: number, options?: Options) {
    return this.#call('DeleteBucket', { BucketId: bucketId }, options);
  }

  viewOneFile(fileKey: number, options?: Options) {
    return this.#call('ViewOneFile', { FileKey: fileKey }, options);
  }

  /** Files by FileKey, in the order asked; unknown or expired ones are left out. */
  async viewMultiFiles(fileKeys: readonly number[], options?: Options) {
    const bad = fileKeys.filter((key) => !Number.isSafeInteger(key) || key < id.minimum!);
    if (bad.length > 0) throw invalidArguments(bad.map((key) => problems.notValid(key, 'Ids')));
    return this.#call('ViewMultiFiles', { Ids: fileKeys.join(',') }, options);
  }

  /** The bucket's files in one answer; `files()` reads a long list as it arrives. */
  viewAllFiles(bucketId: number, options?: Options) {
    return this.#call('ViewAllFiles', { BucketId: bucketId }, options);
  }

  /** The bucket's files, ordered by FileKey, as the streamed ViewAllFiles delivers them. */
  files(bucketId: number, options: Options = {}): AsyncIterable<StoredFile> {
    return listFiles(this.#ctx, bucketId, options.signal);
  }

  deleteFile(fileKey: number, options?: Options) {
    return this.#call('DeleteFile', { FileKey: fileKey }, options);
  }

  /**
   * Uploads a file: bytes, a Blob or File, a stream (with `size` to make it resumable), or
   * `{ path }` in Node.js. From the resumableThreshold on (or with `resumable: true`) it goes by tus
   * in chunks, each retried where it broke; `onUploadUrl` and `resumeFrom` carry an upload over to
   * a later run.
   */
  uploadFile(bucketId: number, source: UploadSource, options: UploadOptions) {
    return uploadFile(this.#ctx, bucketId, source, options);
  }

  /** How many bytes of a resumable upload the service holds; undefined when it is gone. */
  resumableOffset(uploadUrl: string, options?: Options) {
    return uploadOffset(this.#ctx, uploadUrl, options);
  }

  /** Gives a resumable upload up: its bytes go at once. */
  terminateUpload(uploadUrl: string, options?: Options) {
    return terminateUpload(this.#ctx, uploadUrl, options);
  }

  /** GET /Secret/Generate: a download secret for one of the app's files, good for `maxUseTimes` downloads (default 1). */
  generateSecret(fileKey: number, options: { maxUseTimes?: number } & Options = {}) {
    return this.#call('GenerateSecret', { Id: fileKey, MaxUseTimes: options.maxUseTimes }, options);
  }

  /** Where a download secret is spent. */
  secretUrl(secret: string): string {
    const url = new URL('Download/FromSecret', this.#ctx.transport.baseUrl);
    url.searchParams.set('sec', secret);
    return url.href;
  }

  /** A file of an OpenToRead bucket by its FileKey. */
  async downloadFromKey(fileKey: number, options?: DownloadOptions): Promise<Download> {
    checkParams({ FileKey: id }, { FileKey: fileKey });
    return download(this.#ctx, new URL(`Download/FromKey/${fileKey}`, this.#ctx.transport.baseUrl), options);
  }

  /** A file of an OpenToRead bucket at its InternetPath `/<BucketName>/<RealFileName>`. */
  downloadFromPath(bucketName: string, fileName: string, options?: DownloadOptions): Promise<Download> {
    const path = `${encodeURIComponent(bucketName)}/${encodeURIComponent(fileName)}`;
    return download(this.#ctx, new URL(path, this.#ctx.transport.baseUrl), options);
  }

  /** A file through a download secret; each GET uses one of its uses. */
  downloadFromSecret(secret: string, options?: DownloadOptions): Promise<Download> {
    return download(this.#ctx, new URL(this.secretUrl(secret)), options);
  }

  /** Any download URL of this service: an InternetPath as the API gives it, or a share link. */
  download(url: string, options?: DownloadOptions): Promise<Download> {
    return download(this.#ctx, new URL(url, this.#ctx.transport.baseUrl), options);
  }
}

