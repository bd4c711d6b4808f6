import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { BlobWrite } from '../blob-store.js';
import { StorageError } from '../errors.js';
import { fromS3Error } from './errors.js';
import type { PartBody } from './part-buffers.js';
import type { S3UploadClaims } from './upload-claims.js';

/**
 * The parts of one multipart upload, at most `concurrency` of them in memory at once (in flight or
 * being filled; the instance's part slots decide when the next may be filled). The upload is
 * created with its first part, so a small body never makes one.
 */
export class PartUpload {
  uploadId: string | undefined;
  readonly #parts: CompletedPart[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #failure: { error: unknown } | undefined;

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly key: string,
    private readonly objectKey: string,
    private readonly concurrency: number,
    private readonly claims: S3UploadClaims,
  ) {}

  get started(): boolean {
    return this.uploadId !== undefined;
  }

  /** No part of this upload is in flight: it holds no part memory but the one it may be filling. */
  get idle(): boolean {
    return this.#inFlight.size === 0;
  }

  /** Starts sending `part` as the next part; resolves when there is room for the next one. Its memory is freed either way. */
  async send(part: PartBody): Promise<void> {
    try {
      if (!this.uploadId) {
        this.uploadId = (await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: this.objectKey }))).UploadId;
        if (!this.uploadId) throw new StorageError('unavailable', 's3: no UploadId in the answer');
        await this.claims.claim(this.key, this.objectKey, this.uploadId);
      }
    } catch (error) {
      part.done();
      throw error;
    }
    const PartNumber = this.#parts.length + 1;
    this.#parts.push({ PartNumber });
    const body = part.bytes;
    const sending = this.client
      .send(new UploadPartCommand({ Bucket: this.bucket, Key: this.objectKey, UploadId: this.uploadId, PartNumber, Body: body, ContentLength: body.length }))
      .then(({ ETag }) => {
        this.#parts[PartNumber - 1] = { PartNumber, ETag };
      })
      .catch((error: unknown) => {
        this.#failure ??= { error };
      })
      .finally(() => {
        this.#inFlight.delete(sending);
        part.done();
      });
    this.#inFlight.add(sending);
    // The next part is read while this many are in flight, so at most `concurrency` are held.
    while (this.#inFlight.size >= this.concurrency && !this.#failure) await Promise.race(this.#inFlight);
    if (this.#failure) throw this.#failure.error;
  }

  /** Waits for every part; the list CompleteMultipartUpload needs. */
  async finish(): Promise<CompletedPart[]> {
    await Promise.all(this.#inFlight);
    if (this.#failure) throw this.#failure.error;
    return this.#parts;
  }

  /** Waits for the parts in flight, then aborts the upload; never throws (the orphan sweep removes what is left). */
  async abort(): Promise<void> {
    await Promise.all(this.#inFlight);
    if (!this.uploadId) return;
    await this.client
      .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: this.objectKey, UploadId: this.uploadId }))
      .catch(() => {});
    await this.claims.release(this.key, this.uploadId);
  }
}

/**
 * What commit() still has to do: put a body kept in memory, complete a multipart upload, or nothing
 * ('stored': the object is already under its key, complete but without a row, so no reader finds it).
 */
export type Pending = Buffer | { uploadId: string; parts: CompletedPart[] } | 'stored';

export class S3Write implements BlobWrite {
  #state: 'written' | 'committing' | 'aborted' = 'written';
  #commit: Promise<void> | undefined;
  #pending: Pending | undefined;

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    readonly key: string,
    private readonly objectKey: string,
    readonly size: number,
    readonly sha256: string,
    pending: Pending,
    /** Where the multipart upload was claimed; undefined for one that lives longer than an instance (a resumable upload's). */
    private readonly claims: S3UploadClaims | undefined,
  ) {
    this.#pending = pending;
  }

  commit(): Promise<void> {
    if (this.#state !== 'written') return Promise.reject(new Error(`This write is already ${this.#state}.`));
    this.#state = 'committing';
    const pending = this.#pending!;
    if (pending === 'stored') {
      this.#commit = Promise.resolve();
      return this.#commit;
    }
    this.#pending = undefined;
    const Bucket = this.bucket;
    const Key = this.objectKey;
    const request = Buffer.isBuffer(pending)
      ? new PutObjectCommand({ Bucket, Key, Body: pending, ContentLength: pending.length })
      : new CompleteMultipartUploadCommand({ Bucket, Key, UploadId: pending.uploadId, MultipartUpload: { Parts: pending.parts } });
    this.#commit = this.client.send(request as never).then(
      () => (Buffer.isBuffer(pending) ? undefined : this.claims?.release(this.key, pending.uploadId)),
      (error: unknown) => {
        throw fromS3Error(error);
      },
    );
    return this.#commit;
  }

  async abort(): Promise<void> {
    const pending = this.#pending;
    this.#state = 'aborted';
    this.#pending = undefined;
    try {
      await this.#commit?.catch(() => {});
      if (pending && pending !== 'stored' && !Buffer.isBuffer(pending)) {
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: this.objectKey, UploadId: pending.uploadId }));
        await this.claims?.release(this.key, pending.uploadId);
      }
      // A commit that was sent may have made the object even if its answer was lost.
      if (this.#commit || pending === 'stored') await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey }));
    } catch {
      // Whatever is left has no row: the orphan sweep removes it.
    }
  }
}
