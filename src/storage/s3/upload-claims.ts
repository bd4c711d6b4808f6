import { AbortMultipartUploadCommand, DeleteObjectsCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { INSTANCE_ID } from '../../instance-id.js';
import { fromS3Error, httpStatus } from './errors.js';

/** The folder, under the store's prefix, of the markers that name which instance began a multipart upload. */
const CLAIMS_FOLDER = 'incomplete/';
/** DeleteObjects takes at most this many keys per call. */
const DELETE_BATCH = 1000;

interface OpenUpload {
  readonly objectKey: string;
  readonly uploadId: string;
}

/**
 * S3 lists multipart uploads without their metadata, so each instance leaves a small marker object,
 * `<prefix>incomplete/<instance>/<key>/<upload id>`, beside every multipart upload it begins and
 * removes it when the upload is completed or aborted. Another instance can then abort exactly the
 * uploads of an instance whose lease has lapsed, and nothing of a live one. The markers' keys have
 * more than two segments, so the store's own object listings never take them for files.
 */
export class S3UploadClaims {
  readonly #open = new Map<string, OpenUpload>();

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
    private readonly instanceId: string,
  ) {}

  /** Called as soon as a multipart upload exists, before its first part is sent. */
  async claim(key: string, objectKey: string, uploadId: string): Promise<void> {
    const id = `${key}/${uploadId}`;
    this.#open.set(id, { objectKey, uploadId });
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.#markerKey(this.instanceId, id), Body: '' }));
    } catch (error) {
      throw fromS3Error(error);
    }
  }

  /** The upload was completed or aborted; a marker left behind by a failure here is harmless. */
  async release(key: string, uploadId: string): Promise<void> {
    const id = `${key}/${uploadId}`;
    this.#open.delete(id);
    await this.#deleteMarkers(this.instanceId, [id]).catch(() => {});
  }

  /** Aborts every upload this instance has begun and not yet completed (on shutdown). */
  async abortOpen(): Promise<void> {
    const open = [...this.#open];
    this.#open.clear();
    await Promise.all(open.map(([, upload]) => this.#abort(upload).catch(() => {})));
    await this.#deleteMarkers(this.instanceId, open.map(([id]) => id)).catch(() => {});
  }

  /** Aborts every upload that instance `instanceId` began and left, then its markers. */
  async abortAllOf(instanceId: string, objectKeyOf: (key: string) => string): Promise<void> {
    if (!INSTANCE_ID.test(instanceId)) throw new Error(`Not an instance id: ${JSON.stringify(instanceId)}`);
    const Prefix = this.#markerKey(instanceId, '');
    let ContinuationToken: string | undefined;
    do {
      let answer;
      try {
        answer = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix, ContinuationToken }));
      } catch (error) {
        throw fromS3Error(error);
      }
      const ids = (answer.Contents ?? []).flatMap((object) => (object.Key ? [object.Key.slice(Prefix.length)] : []));
      for (const id of ids) {
        const slash = id.indexOf('/');
        if (slash > 0) await this.#abort({ objectKey: objectKeyOf(id.slice(0, slash)), uploadId: id.slice(slash + 1) });
      }
      await this.#deleteMarkers(instanceId, ids);
      ContinuationToken = answer.IsTruncated ? answer.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  async #abort({ objectKey, uploadId }: OpenUpload): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey, UploadId: uploadId }));
    } catch (error) {
      if ((error as Error).name !== 'NoSuchUpload' && httpStatus(error) !== 404) throw fromS3Error(error);
    }
  }

  async #deleteMarkers(instanceId: string, ids: readonly string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += DELETE_BATCH) {
      const Objects = ids.slice(i, i + DELETE_BATCH).map((id) => ({ Key: this.#markerKey(instanceId, id) }));
      try {
        await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects, Quiet: true } }));
      } catch (error) {
        throw fromS3Error(error);
      }
    }
  }

  #markerKey(instanceId: string, id: string): string {
    return `${this.prefix}${CLAIMS_FOLDER}${instanceId}/${id}`;
  }
}
