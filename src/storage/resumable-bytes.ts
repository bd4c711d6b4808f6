import type { Readable } from 'node:stream';
import type { BlobWrite } from './blob-store.js';

/** What is known of the request that appends. */
export interface AppendRequest {
  /** Its declared length: a store may send what the body will complete while it arrives. */
  bodyBytes?: number;
  /**
   * The upload's lock count, once this request took the lock. One more than at this instance's last
   * append of the upload means no other request wrote its bytes since: a store may trust what it saw.
   */
  lockCount?: number;
}

/**
 * Where the bytes of incomplete resumable uploads live: in the storage backend (a folder beside
 * the disk store's objects, or the bucket on S3), never in one instance's temp folder, so any
 * instance can take an upload over. Ids are made by the service ([a-f0-9]).
 */
export interface ResumableBytes {
  /** Creates what the store needs; safe on every start. */
  prepare(): Promise<void>;
  /** Begins an empty upload. */
  create(id: string): Promise<void>;
  /**
   * Appends `source` after the first `offset` bytes (anything stored past them, from a request that
   * was never acknowledged, is dropped first) and resolves with the new length once every byte
   * counted in it is durable. When the source fails (a dropped connection), the bytes that arrived
   * are kept and counted all the same; only a failure of the store itself rejects.
   */
  append(id: string, offset: number, source: Readable, request?: AppendRequest): Promise<number>;
  /**
   * The finished upload's bytes as a write into the blob store, hashed and waiting for commit() as
   * after BlobStore.write(); the upload's own bytes may be gone afterwards (on disk they are moved).
   */
  finish(id: string, limits: { maxBytes: number }): Promise<BlobWrite>;
  /** Removes uploads' bytes; missing ones are ignored. */
  remove(ids: readonly string[]): Promise<void>;
  /** Every upload the store holds bytes for, with when they last changed, a page at a time. */
  list(): AsyncIterable<ReadonlyArray<{ id: string; modifiedAt: Date }>>;
}
