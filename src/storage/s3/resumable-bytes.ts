import {
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type Part,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import type { BlobWrite } from '../blob-store.js';
import { isStorageError, StorageError } from '../errors.js';
import type { AppendRequest, ResumableBytes } from '../resumable-bytes.js';
import { PartAssembler, PartBuffers, plainPart } from './part-buffers.js';
import { RunningHashes } from '../running-hashes.js';
import { ResumableMultipartUploads } from './multipart-uploads.js';
import { LastSeenUploads } from './resumable-seen.js';
import { callS3, PartsInFlight, type StreamedPart, type Stored } from './resumable-parts.js';
import type { S3Store } from './store.js';

const ID = /^[a-f0-9]{32}$/;
/** The tail object's metadata: the length of the parts it follows, so a tail a later part absorbed is recognised as stale. */
const TAIL_BASE = 'base';
const MiB = 1024 * 1024;
/** S3 refuses smaller parts but the last. */
const MIN_PART_BYTES = 5 * MiB;
const MAX_PARTS = 10_000;

export interface S3ResumableBytesOptions {
  bucket: string;
  /** The deployment's S3_PREFIX; the tails live under `<prefix>resumable/`. */
  prefix: string;
  /** S3_PART_SIZE_BYTES: an upload's non-final parts are half of it (see #cut). */
  partSize: number;
  /** Parts of one PATCH in flight at once (S3_UPLOAD_CONCURRENCY). */
  concurrency: number;
  /** MAX_UPLOAD_BYTES: no upload may need more than S3's 10,000 parts. */
  maxUploadBytes: number;
  /** The files' store: an upload's multipart upload is begun at the object key its file will have. */
  store: S3Store;
}

/**
 * Each incomplete upload is an S3 multipart upload begun at the object key of the file it becomes
 * (the storage key is the upload's id), plus an object `<prefix>resumable/<id>.tail` with the
 * acknowledged bytes that do not fill a part yet (S3 refuses non-final parts under 5 MiB).
 * Everything is found again from the id alone (ListMultipartUploads, once per instance, then
 * ListParts), so any instance resumes any upload. Completion sends the tail as the last part and
 * hands the multipart upload to the upload flow, which completes it: no byte is written twice.
 */
export class S3ResumableBytes implements ResumableBytes {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #folder: string;
  readonly #cut: number;
  /** Parts of the usual size are assembled in these; their slots are the file store's. */
  readonly #buffers: PartBuffers;
  readonly #concurrency: number;
  readonly #store: S3Store;
  readonly #hashes = new RunningHashes();
  readonly #uploads: ResumableMultipartUploads;
  readonly #seen = new LastSeenUploads();

  constructor(client: S3Client, options: S3ResumableBytesOptions) {
    this.#client = client;
    this.#bucket = options.bucket;
    this.#folder = `${options.prefix}resumable/`;
    // Half a part size, so that a PATCH of one part size goes to the store as two parts, the first
    // while the second is still arriving; never so small that an upload would need too many parts.
    this.#cut = Math.max(MIN_PART_BYTES, Math.floor(options.partSize / 2), Math.ceil(options.maxUploadBytes / (MAX_PARTS - 1)));
    this.#concurrency = options.concurrency;
    this.#store = options.store;
    this.#uploads = new ResumableMultipartUploads(client, options.bucket);
    this.#buffers = new PartBuffers(this.#cut, options.store.partBuffers.slots);
  }

  /** The bucket is checked or created by the blob store. */
  async prepare(): Promise<void> {}

  async create(id: string): Promise<void> {
    await callS3(this.#client.send(new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key: this.#key(id) })));
  }

  async append(id: string, offset: number, source: Readable, request: AppendRequest = {}): Promise<number> {
    const { bodyBytes, lockCount } = request;
    const hash = this.#hashes.take(id, offset);
    let part: PartAssembler | undefined;
    /** The part being sent while it arrives; cancelled if the body ends before filling it, its bytes then the tail's. */
    let streamed: StreamedPart | undefined;
    try {
      const stored = (await this.#trusted(id, offset, lockCount)) ?? (await this.#stored(id));
      const foundTail = stored.tail.length;
      const foundPartBytes = stored.partBytes;
      let skip = 0;
      if (offset < stored.partBytes) {
        // Parts went in after the last acknowledged offset (the answer or the state update was lost):
        // the client sends those bytes again, which are the same bytes, so they are skipped.
        skip = stored.partBytes - offset;
        stored.tail = Buffer.alloc(0);
      } else if (offset <= stored.partBytes + stored.tail.length) {
        stored.tail = stored.tail.subarray(0, offset - stored.partBytes);
      } else {
        throw new StorageError('not-found', `s3: resumable upload has ${stored.partBytes + stored.tail.length} bytes, not ${offset}`);
      }
      // The tail object is rewritten only when its bytes change: cut, moved into a part, or grown.
      let tailChanged = stored.tail.length !== foundTail;
      let skipped = 0;
      let received = 0;
      const parts = new PartsInFlight(this.#client, this.#bucket, this.#key(id), stored, this.#concurrency);
      // An upload keeps the part size it began with, whatever S3_PART_SIZE_BYTES says now.
      const cut = stored.parts[0]?.Size ?? this.#cut;
      part = new PartAssembler(cut === this.#buffers.size ? this.#buffers : new PartBuffers(cut, this.#buffers.slots));
      const assembled = part;
      // Where the part being assembled begins in the upload, and where this request's body ends.
      let partStart = stored.partBytes;
      const end = bodyBytes === undefined ? undefined : offset + bodyBytes;
      /** Adds bytes to the parts; false once a part has failed. Reading stops while the part waits for its buffer: the request is held back, not buffered. */
      const add = async (bytes: Buffer): Promise<boolean> => {
        for (let rest = bytes; rest.length > 0; ) {
          if (!assembled.reserved) await assembled.reserve(() => parts.idle);
          const from = assembled.length;
          // Only a part the body is known to fill: one cut short would have gone to the store for nothing.
          if (from === 0 && end !== undefined && end >= partStart + cut) streamed = parts.begin(cut);
          rest = assembled.add(rest);
          streamed?.push(assembled.filled.subarray(from));
          if (!assembled.full) continue;
          streamed?.end();
          const sent = await parts.send(assembled.take(), streamed);
          streamed = undefined;
          partStart += cut;
          if (!sent) return false;
        }
        return true;
      };
      const sending = await add(stored.tail);
      for await (const chunk of sending ? untilFailure(source) : []) {
        const behind = hash?.update(chunk);
        if (behind) await behind;
        received += chunk.length;
        let bytes = chunk;
        if (skipped < skip) {
          const dropped = Math.min(skip - skipped, bytes.length);
          skipped += dropped;
          bytes = bytes.subarray(dropped);
          if (bytes.length === 0) continue;
        }
        tailChanged = true;
        if (!(await add(bytes))) break;
      }
      await streamed?.cancel();
      await parts.finish();
      if (skipped < skip) {
        part.release();
        hash?.drop();
        return offset + skipped;
      }
      const tail = part.copy();
      // No tail after new parts needs no write: the old tail's base no longer matches, so it is ignored.
      const emptiedByParts = tail.length === 0 && (foundTail === 0 || stored.partBytes > foundPartBytes);
      if (tailChanged && !emptiedByParts) await this.#putTail(id, stored.partBytes, tail);
      const size = stored.partBytes + tail.length;
      if (lockCount !== undefined) {
        this.#seen.remember(id, { lockCount, size, uploadId: stored.uploadId, parts: stored.parts, partBytes: stored.partBytes, tailBytes: tail.length });
      }
      // Only when the hash saw exactly the bytes stored: a tail put by a failed call leaves it behind.
      if (hash && size === offset + received) this.#hashes.keep(id, size, hash);
      else hash?.drop();
      return size;
    } catch (error) {
      await streamed?.cancel();
      part?.release();
      hash?.drop();
      throw error;
    }
  }

  async finish(id: string, limits: { maxBytes: number }): Promise<BlobWrite> {
    const known = await this.#hashes.finish(id);
    this.#seen.forget(id);
    const stored = await this.#stored(id);
    this.#uploads.forget(this.#key(id));
    const size = stored.partBytes + stored.tail.length;
    const sha256 = known?.size === size ? known.sha256 : undefined;
    if (stored.parts.length === 0) {
      // Smaller than one part: the tail is the whole file, put on commit like a small UploadFile's.
      await this.#uploads.abort(this.#key(id));
      return this.#store.adopt(id, stored.tail, size, limits, sha256);
    }
    if (stored.tail.length > 0) await this.#uploadPart(id, stored, stored.tail);
    const parts = stored.parts.map(({ PartNumber, ETag }) => ({ PartNumber, ETag }));
    return this.#store.adopt(id, { uploadId: stored.uploadId, parts }, size, limits, sha256);
  }

  /** The tail and the multipart upload; never the object at the upload's key, which is its file once completed. */
  async remove(ids: readonly string[]): Promise<void> {
    this.#hashes.forget(ids);
    for (const id of ids) {
      this.#seen.forget(id);
      await callS3(this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#tailKey(id) }))).catch((error: unknown) => {
        if (!isStorageError(error, 'not-found')) throw error;
      });
      await this.#uploads.abort(this.#key(id));
    }
  }

  /**
   * The tails under resumable/. A multipart upload left without state is the file orphan sweep's
   * to abort, with every other incomplete write of the bucket.
   */
  async *list(): AsyncIterable<ReadonlyArray<{ id: string; modifiedAt: Date }>> {
    let ContinuationToken: string | undefined;
    do {
      const answer = await callS3(this.#client.send(new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: this.#folder, ContinuationToken })));
      const page = (answer.Contents ?? []).flatMap((object) => {
        const id = this.#idOf(object.Key);
        return id && object.LastModified ? [{ id, modifiedAt: object.LastModified }] : [];
      });
      if (page.length > 0) yield page;
      ContinuationToken = answer.IsTruncated ? answer.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  /** What this instance left of the upload, if nobody wrote it since: the parts as they were, the tail read only if there is one. */
  async #trusted(id: string, offset: number, lockCount: number | undefined): Promise<Stored | undefined> {
    const seen = this.#seen.take(id, lockCount, offset);
    if (!seen) return undefined;
    const tail = seen.tailBytes === 0 ? { bytes: Buffer.alloc(0), base: seen.partBytes } : await this.#getTail(id);
    if (tail?.base !== seen.partBytes || tail.bytes.length !== seen.tailBytes) return undefined;
    return { uploadId: seen.uploadId, parts: [...seen.parts], partBytes: seen.partBytes, tail: tail.bytes };
  }

  /** The upload as the store holds it; a tail whose base is not the parts' length is stale (a part absorbed it). */
  async #stored(id: string): Promise<Stored> {
    const [listed, tailObject] = await Promise.all([this.#uploads.parts(this.#key(id)), this.#getTail(id)]);
    // Parts count from the first up to a gap. Every part but the last has the size of the first, so a
    // part that went in while an earlier one of its PATCH failed holds the bytes of its own place: it
    // counts once the gap is filled (or is sent again over itself).
    const parts: Part[] = [];
    for (const part of listed) {
      if (part.PartNumber !== parts.length + 1) break;
      parts.push(part);
    }
    const partBytes = parts.reduce((sum, part) => sum + (part.Size ?? 0), 0);
    const tail = tailObject && tailObject.base === partBytes ? tailObject.bytes : Buffer.alloc(0);
    return { uploadId: listed.uploadId, parts, partBytes, tail };
  }

  async #getTail(id: string): Promise<{ bytes: Buffer; base: number } | undefined> {
    try {
      const object = await callS3(this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: this.#tailKey(id) })));
      return { bytes: Buffer.from(await object.Body!.transformToByteArray()), base: Number(object.Metadata?.[TAIL_BASE]) };
    } catch (error) {
      if (isStorageError(error, 'not-found')) return undefined;
      throw error;
    }
  }

  /** The last part, at completion. */
  async #uploadPart(id: string, stored: Stored, body: Buffer): Promise<void> {
    const parts = new PartsInFlight(this.#client, this.#bucket, this.#key(id), stored, 1);
    await parts.send(plainPart(body));
    await parts.finish();
  }

  async #putTail(id: string, base: number, tail: Buffer): Promise<void> {
    await callS3(this.#client.send(
      new PutObjectCommand({ Bucket: this.#bucket, Key: this.#tailKey(id), Body: tail, ContentLength: tail.length, Metadata: { [TAIL_BASE]: String(base) } }),
    ));
  }

  /** The multipart upload's key: the object key of the file it becomes. */
  #key(id: string): string {
    if (!ID.test(id)) throw new Error(`Not a resumable upload id: ${JSON.stringify(id)}`);
    return this.#store.objectKey(id);
  }

  #tailKey(id: string): string {
    if (!ID.test(id)) throw new Error(`Not a resumable upload id: ${JSON.stringify(id)}`);
    return `${this.#folder}${id}.tail`;
  }

  #idOf(tailKey: string | undefined): string | undefined {
    const name = tailKey?.startsWith(this.#folder) && tailKey.endsWith('.tail') ? tailKey.slice(this.#folder.length, -'.tail'.length) : undefined;
    return name && ID.test(name) ? name : undefined;
  }
}

/** The source's chunks until it ends or fails: a dropped connection ends an append, it does not fail it. */
async function* untilFailure(source: Readable): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of source) yield chunk as Buffer;
  } catch {
    // The client went away; what arrived is kept.
  }
}
