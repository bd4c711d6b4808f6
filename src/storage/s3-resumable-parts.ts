import { UploadPartCommand, type Part, type S3Client } from '@aws-sdk/client-s3';
import { fromS3Error, httpStatus, StorageError } from './errors.js';
import type { PartBody, PartSlots } from './part-buffers.js';

/** A resumable upload as the store holds it. */
export interface Stored {
  uploadId: string;
  parts: Part[];
  /** Bytes in the parts. */
  partBytes: number;
  /** The bytes after the parts, kept in `<id>.tail` until there are enough for a part. */
  tail: Buffer;
}

/** One call to the store; its failures as StorageErrors (a missing key or upload as 'not-found'). */
export async function callS3<T>(request: Promise<T>): Promise<T> {
  try {
    return await request;
  } catch (error) {
    if ((error as Error).name === 'NoSuchUpload' || httpStatus(error) === 404) throw new StorageError('not-found', 's3: not found', { cause: error });
    throw fromS3Error(error);
  }
}

/**
 * The parts one append sends, numbered after the stored ones, at most `concurrency` in flight (each
 * holds its bytes until answered) and only while `slots` has room. `stored` learns of them only once
 * every one is in, in order.
 */
export class PartsInFlight {
  readonly #inFlight = new Set<Promise<void>>();
  readonly #sent: Part[] = [];
  #next: number;
  #failure: { error: unknown } | undefined;

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly key: string,
    private readonly stored: Stored,
    private readonly concurrency: number,
    private readonly slots: PartSlots,
  ) {
    this.#next = (stored.parts.at(-1)?.PartNumber ?? 0) + 1;
  }

  /** Starts sending `part` as the next part; resolves when there is room for another, false once one has failed. */
  async send(part: PartBody): Promise<boolean> {
    await this.slots.acquire();
    const PartNumber = this.#next++;
    const body = part.bytes;
    const sending = callS3(
      this.client.send(new UploadPartCommand({ Bucket: this.bucket, Key: this.key, UploadId: this.stored.uploadId, PartNumber, Body: body, ContentLength: body.length })),
    )
      .then(({ ETag }) => void this.#sent.push({ PartNumber, ETag, Size: body.length }))
      .catch((error: unknown) => void (this.#failure ??= { error }))
      .finally(() => {
        this.#inFlight.delete(sending);
        this.slots.release();
        part.done();
      });
    this.#inFlight.add(sending);
    while (this.#inFlight.size >= this.concurrency && !this.#failure) await Promise.race(this.#inFlight);
    return !this.#failure;
  }

  /** Waits for every part, then adds them to `stored`; rejects with the first failure. */
  async finish(): Promise<void> {
    await Promise.all(this.#inFlight);
    if (this.#failure) throw this.#failure.error;
    this.#sent.sort((a, b) => a.PartNumber! - b.PartNumber!);
    for (const part of this.#sent) {
      this.stored.parts.push(part);
      this.stored.partBytes += part.Size!;
    }
  }
}
