import { AbortMultipartUploadCommand, ListMultipartUploadsCommand, ListPartsCommand, type Part, type S3Client } from '@aws-sdk/client-s3';
import { isStorageError, StorageError } from '../errors.js';
import { callS3 } from './resumable-parts.js';

/** Keys whose multipart upload id is remembered; past this, the oldest is forgotten and listed again if needed. */
const REMEMBERED_KEYS = 10_000;

/**
 * The multipart uploads that resumable uploads keep their parts in, one per object key. The id of
 * a key's multipart upload never changes while its upload lasts, so it is remembered: a PATCH then
 * lists only the parts, not the bucket's multipart uploads before them.
 */
export class ResumableMultipartUploads {
  readonly #uploadIdOf = new Map<string, string>();

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  /** The parts stored at `key`, in part order, with their multipart upload's id; not-found once ended, on any instance. */
  async parts(key: string): Promise<Part[] & { uploadId: string }> {
    const uploadId = this.#uploadIdOf.get(key) ?? (await this.#firstUploadId(key));
    try {
      return await this.#partsOf(key, uploadId);
    } catch (error) {
      if (isStorageError(error, 'not-found')) this.#uploadIdOf.delete(key);
      throw error;
    }
  }

  /** Forgets `key`'s multipart upload, which is being completed. */
  forget(key: string): void {
    this.#uploadIdOf.delete(key);
  }

  /** Aborts every multipart upload at `key`. */
  async abort(key: string): Promise<void> {
    this.#uploadIdOf.delete(key);
    for (const UploadId of await this.#uploadIds(key)) {
      await callS3(this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId }))).catch((error: unknown) => {
        if (!isStorageError(error, 'not-found')) throw error;
      });
    }
  }

  async #partsOf(key: string, uploadId: string): Promise<Part[] & { uploadId: string }> {
    const parts: Part[] = [];
    let PartNumberMarker: string | undefined;
    do {
      const answer = await callS3(this.client.send(new ListPartsCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumberMarker })));
      parts.push(...(answer.Parts ?? []));
      PartNumberMarker = answer.IsTruncated ? answer.NextPartNumberMarker : undefined;
    } while (PartNumberMarker);
    parts.sort((a, b) => a.PartNumber! - b.PartNumber!);
    return Object.assign(parts, { uploadId });
  }

  /** The first multipart upload the store lists at `key`, as every instance finds it (a retried creation can begin two; the other one gets no part). */
  async #firstUploadId(key: string): Promise<string> {
    const [uploadId] = await this.#uploadIds(key);
    if (!uploadId) throw new StorageError('not-found', 's3: no such resumable upload');
    if (this.#uploadIdOf.size >= REMEMBERED_KEYS) this.#uploadIdOf.delete(this.#uploadIdOf.keys().next().value!);
    this.#uploadIdOf.set(key, uploadId);
    return uploadId;
  }

  async #uploadIds(key: string): Promise<string[]> {
    const answer = await callS3(this.client.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: key })));
    return (answer.Uploads ?? []).filter((upload) => upload.Key === key && upload.UploadId).map((upload) => upload.UploadId!);
  }
}
