import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { isStorageKey, newStorageKey, type BlobRead, type BlobStore, type BlobWrite, type ByteRange, type IncompleteWrite, type StoredObject, type WriteOptions } from '../blob-store.js';
import { isStorageError, StorageError } from '../errors.js';
import { describeS3Error, fromS3Error, httpStatus } from './errors.js';
import { meter } from '../meter.js';
import { PartAssembler, PartBuffers, PartSlots } from './part-buffers.js';
import { S3UploadClaims } from './upload-claims.js';
import { PartUpload, S3Write, type Pending } from './write.js';

/** DeleteObjects takes at most this many keys per call. */
const DELETE_BATCH = 1000;
/** How many incomplete uploads removeIncompleteWrites() aborts at once. */
const PARALLEL_ABORTS = 16;
/** checkWritable() runs before every upload: a healthy answer is trusted this long, so uploads do not each pay a round trip. */
const HEALTHY_FOR_MS = 1000;

export interface S3StoreOptions {
  bucket: string;
  /** Put before every object key, e.g. `files/`; empty for none. */
  prefix: string;
  /** Bytes per part of a multipart upload; a body smaller than one part is sent in one PutObject. */
  partSize: number;
  /** Parts of one upload in flight at once: memory per upload stays under partSize × concurrency. */
  concurrency: number;
  /** Parts in flight at once across every upload of the instance (resumable ones included). */
  partSlots: number;
  /** Entries per page of listObjects() and listIncompleteWrites(); at most 1000. */
  pageSize?: number;
  /** Names this instance's multipart uploads, so another instance can abort them once its lease lapses. */
  instanceId: string;
}

/**
 * Bytes in a bucket of any S3-compatible store, under `<prefix><first two>/<key>`: the same layout
 * as the disk store's objects/ folder, so a standard sync tool moves a deployment between them.
 *
 * A write streams in part by part as a multipart upload that is completed only on commit, so the
 * object appears under its final key in one step and never partly; there is no copy afterwards (a
 * single S3 copy stops at 5 GB). A body that fits in one part stays in memory and is put on commit.
 */
export class S3Store implements BlobStore {
  readonly description: string;
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #concurrency: number;
  /** The buffers parts are assembled in; their slots are shared with resumable uploads. */
  readonly partBuffers: PartBuffers;
  readonly #pageSize: number;
  readonly #claims: S3UploadClaims;
  #healthyUntil = 0;

  constructor(client: S3Client, options: S3StoreOptions) {
    this.#client = client;
    this.#bucket = options.bucket;
    this.#prefix = options.prefix;
    this.partBuffers = new PartBuffers(options.partSize, new PartSlots(options.partSlots));
    this.#concurrency = options.concurrency;
    this.#pageSize = Math.min(options.pageSize ?? 1000, 1000);
    this.#claims = new S3UploadClaims(client, options.bucket, options.prefix, options.instanceId);
    this.description = `S3 bucket ${options.bucket}${options.prefix ? ` under ${options.prefix}` : ''}`;
  }

  /** Checks the bucket and creates it when it is missing; the message names S3_BUCKET and what the store said. */
  async prepare(): Promise<void> {
    const Bucket = this.#bucket;
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket }));
      return;
    } catch (error) {
      if (httpStatus(error) !== 404) throw new Error(`S3_BUCKET "${Bucket}" could not be checked: ${describeS3Error(error)}.`, { cause: error });
    }
    try {
      await this.#client.send(new CreateBucketCommand({ Bucket }));
    } catch (error) {
      const name = (error as Error).name;
      // Another instance starting at the same moment made it.
      if (name === 'BucketAlreadyOwnedByYou') return;
      throw new Error(`S3_BUCKET "${Bucket}" does not exist and could not be created: ${describeS3Error(error)}.`, { cause: error });
    }
  }

  async checkWritable(): Promise<void> {
    if (Date.now() < this.#healthyUntil) return;
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: this.#bucket }));
    } catch (error) {
      throw fromS3Error(error);
    }
    this.#healthyUntil = Date.now() + HEALTHY_FOR_MS;
  }

  async write(source: Readable, { maxBytes, lengthAtMost, key: givenKey }: WriteOptions): Promise<BlobWrite> {
    const key = givenKey ?? newStorageKey();
    const upload = new PartUpload(this.#client, this.#bucket, key, this.objectKey(key), this.#concurrency, this.#claims);
    const metered = meter(source, maxBytes, lengthAtMost);
    const part = new PartAssembler(this.partBuffers);
    try {
      // Reading stops while the part waits for its buffer: the request is held back, not buffered.
      for await (const chunk of metered as AsyncIterable<Buffer>) {
        for (let rest = chunk; rest.length > 0; ) {
          if (!part.reserved) await part.reserve(() => upload.idle);
          rest = part.add(rest);
          if (part.full) await upload.send(part.take());
        }
      }
      if (!upload.started) return new S3Write(this.#client, this.#bucket, key, this.objectKey(key), metered.size, metered.sha256(), part.copy(), this.#claims);
      if (part.length > 0) await upload.send(part.take());
      const parts = await upload.finish();
      return new S3Write(this.#client, this.#bucket, key, this.objectKey(key), metered.size, metered.sha256(), { uploadId: upload.uploadId!, parts }, this.#claims);
    } catch (error) {
      part.release();
      await upload.abort();
      // The source's own error, or 'too-large' from the meter, as is; a failure of the store as a StorageError.
      throw metered.errored === error || isStorageError(error) ? error : fromS3Error(error);
    }
  }

  /**
   * A write of `key` begun outside write() (a resumable upload: a multipart upload at the object's
   * final key, or its bytes in memory when they are fewer than a part), to commit like any other.
   * Without its sha256 the object is completed now and read back to hash it: read, never written again.
   */
  async adopt(key: string, bytes: Exclude<Pending, 'stored'>, size: number, { maxBytes }: { maxBytes: number }, sha256?: string): Promise<BlobWrite> {
    const write = (pending: Pending, digest: string) => new S3Write(this.#client, this.#bucket, key, this.objectKey(key), size, digest, pending, undefined);
    if (size > maxBytes) {
      await write(bytes, '').abort();
      throw new StorageError('too-large', `more than ${maxBytes} bytes`);
    }
    if (Buffer.isBuffer(bytes)) sha256 ??= createHash('sha256').update(bytes).digest('hex');
    if (sha256 !== undefined) return write(bytes, sha256);
    const unhashed = write(bytes, '');
    try {
      await unhashed.commit();
      const metered = meter((await this.open(key)).stream, maxBytes);
      await finished(metered.resume());
      if (metered.size !== size) throw new StorageError('unavailable', `s3: the completed object has ${metered.size} bytes, not ${size}`);
      return write('stored', metered.sha256());
    } catch (error) {
      await unhashed.abort();
      throw isStorageError(error) ? error : fromS3Error(error);
    }
  }

  async open(key: string, range?: ByteRange): Promise<BlobRead> {
    const Key = this.objectKey(key);
    try {
      const object = await this.#client.send(
        new GetObjectCommand({ Bucket: this.#bucket, Key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
      );
      return { stream: object.Body as Readable };
    } catch (error) {
      throw isStorageError(error) ? error : fromS3Error(error, 'not-found');
    }
  }

  async read(key: string, range: ByteRange): Promise<Buffer> {
    const { stream } = await this.open(key, range);
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    } catch (error) {
      throw isStorageError(error) ? error : fromS3Error(error);
    }
  }

  async remove(keys: readonly string[]): Promise<void> {
    const objectKeys = keys.map((key) => this.objectKey(key));
    for (let i = 0; i < objectKeys.length; i += DELETE_BATCH) {
      const batch = objectKeys.slice(i, i + DELETE_BATCH);
      let answer;
      try {
        answer = await this.#client.send(
          new DeleteObjectsCommand({ Bucket: this.#bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }),
        );
      } catch (error) {
        throw fromS3Error(error);
      }
      const failed = (answer.Errors ?? []).filter((error) => error.Code !== 'NoSuchKey');
      if (failed.length > 0) throw new StorageError('unavailable', `s3: ${failed.length} objects not deleted (${failed[0]!.Code})`);
    }
  }

  async *listObjects(): AsyncIterable<readonly StoredObject[]> {
    let ContinuationToken: string | undefined;
    do {
      let answer;
      try {
        answer = await this.#client.send(
          new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: this.#prefix || undefined, MaxKeys: this.#pageSize, ContinuationToken }),
        );
      } catch (error) {
        throw fromS3Error(error);
      }
      const page = (answer.Contents ?? []).flatMap((object) => {
        const key = this.#storageKeyOf(object.Key);
        // A resumable upload is completed in place, at its id, before its file's row is written.
        return key && object.LastModified ? [{ key, modifiedAt: object.LastModified, resumableId: key }] : [];
      });
      if (page.length > 0) yield page;
      ContinuationToken = answer.IsTruncated ? answer.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  async *listIncompleteWrites(): AsyncIterable<readonly IncompleteWrite[]> {
    let KeyMarker: string | undefined;
    let UploadIdMarker: string | undefined;
    do {
      let answer;
      try {
        answer = await this.#client.send(
          new ListMultipartUploadsCommand({ Bucket: this.#bucket, Prefix: this.#prefix || undefined, MaxUploads: this.#pageSize, KeyMarker, UploadIdMarker }),
        );
      } catch (error) {
        throw fromS3Error(error);
      }
      const page = (answer.Uploads ?? []).flatMap((upload) => {
        const key = this.#storageKeyOf(upload.Key);
        // The id carries both halves S3 needs to abort it: the key and the upload's own id. A
        // resumable upload's bytes are a multipart upload begun at the key its file will have,
        // which is its id (S3ResumableBytes), for as long as the upload lasts.
        return key && upload.UploadId && upload.Initiated
          ? [{ id: `${key}/${upload.UploadId}`, key, startedAt: upload.Initiated, instanceId: undefined, resumableId: key }]
          : [];
      });
      if (page.length > 0) yield page;
      const more = answer.IsTruncated === true;
      KeyMarker = more ? answer.NextKeyMarker : undefined;
      UploadIdMarker = more ? answer.NextUploadIdMarker : undefined;
    } while (KeyMarker);
  }

  async removeIncompleteWrites(ids: readonly string[]): Promise<void> {
    const uploads = ids.map((id) => {
      const slash = id.indexOf('/');
      return { Key: this.objectKey(id.slice(0, slash)), UploadId: id.slice(slash + 1) };
    });
    for (let i = 0; i < uploads.length; i += PARALLEL_ABORTS) {
      await Promise.all(
        uploads.slice(i, i + PARALLEL_ABORTS).map(async ({ Key, UploadId }) => {
          try {
            await this.#client.send(new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key, UploadId }));
          } catch (error) {
            if ((error as Error).name !== 'NoSuchUpload' && httpStatus(error) !== 404) throw fromS3Error(error);
          }
        }),
      );
    }
  }

  removeIncompleteWritesOf(instanceId: string): Promise<void> {
    return this.#claims.abortAllOf(instanceId, (key) => this.objectKey(key));
  }

  abortWritesInProgress(): Promise<void> {
    return this.#claims.abortOpen();
  }

  /** Where `key` lives in the bucket. */
  objectKey(key: string): string {
    if (!isStorageKey(key)) throw new Error(`Not a storage key: ${JSON.stringify(key)}`);
    return `${this.#prefix}${key.slice(0, 2)}/${key}`;
  }

  /** The storage key an object key names, if #objectKey() would have made it; else undefined. */
  #storageKeyOf(objectKey: string | undefined): string | undefined {
    if (!objectKey?.startsWith(this.#prefix)) return undefined;
    const [folder, key, ...rest] = objectKey.slice(this.#prefix.length).split('/');
    return rest.length === 0 && key !== undefined && isStorageKey(key) && key.slice(0, 2) === folder ? key : undefined;
  }
}
