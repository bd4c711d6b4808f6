import { PassThrough } from 'node:stream';
import { UploadPartCommand, type Part, type S3Client } from '@aws-sdk/client-s3';
import { StorageError } from '../errors.js';
import { fromS3Error, httpStatus } from './errors.js';
import type { PartBody } from './part-buffers.js';
import { S3_ANSWER_TIMEOUT_MS } from './client.js';

/**
 * A streamed part's request lasts as long as its client takes to send the part, which on a slow link
 * is longer than any answer timeout: it has no limit of its own until its last byte (the service's
 * idle timeout cuts a client that stops, and the part with it), then the usual one.
 */
const STREAMING_REQUEST_TIMEOUT_MS = 24 * 60 * 60 * 1000;

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
 * A part sent to the store while its bytes arrive, so that the store has it moments after its last
 * byte instead of a whole part's transfer later. Its body is views of the part's buffer, which stays
 * the part's until the store answers. A failed attempt (the store's error or silence, or the request
 * cut short) answers undefined, and the part is sent again from its buffer, whose retries start from
 * its first byte. The body cannot be signed before it is sent: the part goes with an unsigned
 * payload, its length checked by the store; the service hashes the whole upload itself.
 */
export class StreamedPart {
  readonly #body = new PassThrough();
  readonly #abort = new AbortController();
  #answerDue: NodeJS.Timeout | undefined;
  /** The part's ETag, or undefined when this attempt failed. */
  readonly answer: Promise<string | undefined>;

  constructor(client: S3Client, command: { Bucket: string; Key: string; UploadId: string; PartNumber: number }, length: number) {
    // The body's failure is the request's, reported by the answer.
    this.#body.on('error', () => {});
    this.answer = client
      .send(new UploadPartCommand({ ...command, Body: this.#body, ContentLength: length }), {
        abortSignal: this.#abort.signal,
        requestTimeout: STREAMING_REQUEST_TIMEOUT_MS,
      })
      .then(({ ETag }) => ETag)
      .catch(() => undefined)
      .finally(() => clearTimeout(this.#answerDue));
  }

  /** Bytes of the part, in order: views that must not change until the answer. */
  push(bytes: Buffer): void {
    this.#body.write(bytes);
  }

  /** Every byte was pushed: from now on the store has the usual time to answer. */
  end(): void {
    this.#body.end();
    this.#answerDue = setTimeout(() => this.#abort.abort(), S3_ANSWER_TIMEOUT_MS);
  }

  /** The part will not be filled: the request is cut, and the store drops what it received. */
  cancel(): Promise<unknown> {
    this.#body.destroy(new Error('The part was cut short.'));
    return this.answer;
  }
}

/**
 * The parts one append sends, numbered after the stored ones, at most `concurrency` in flight (each
 * holds its bytes until answered). `stored` learns of them only once every one is in, in order.
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
  ) {
    this.#next = (stored.parts.at(-1)?.PartNumber ?? 0) + 1;
  }

  /** No part of this append is in flight. */
  get idle(): boolean {
    return this.#inFlight.size === 0;
  }

  /** Begins sending the next part while its `length` bytes arrive; send() then finishes it. */
  begin(length: number): StreamedPart {
    return new StreamedPart(this.client, this.#command(this.#next), length);
  }

  /**
   * Sends `part` as the next part, or waits for `streamed` to have sent it (and sends it from its
   * bytes if that failed); resolves when there is room for another, false once one has failed.
   */
  async send(part: PartBody, streamed?: StreamedPart): Promise<boolean> {
    const PartNumber = this.#next++;
    const body = part.bytes;
    const sending = (streamed ? streamed.answer : Promise.resolve(undefined))
      .then(async (ETag) => ETag ?? (await callS3(this.client.send(new UploadPartCommand({ ...this.#command(PartNumber), Body: body, ContentLength: body.length })))).ETag)
      .then((ETag) => void this.#sent.push({ PartNumber, ETag, Size: body.length }))
      .catch((error: unknown) => void (this.#failure ??= { error }))
      .finally(() => {
        this.#inFlight.delete(sending);
        part.done();
      });
    this.#inFlight.add(sending);
    while (this.#inFlight.size >= this.concurrency && !this.#failure) await Promise.race(this.#inFlight);
    return !this.#failure;
  }

  #command(PartNumber: number) {
    return { Bucket: this.bucket, Key: this.key, UploadId: this.stored.uploadId, PartNumber };
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
