import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataStore, ERRORS, Upload, type Lock, type Locker } from '@tus/utils';
import { resumableMessages } from '../errors.js';
import {
  appendResumable,
  createResumable,
  findResumable,
  LOCK_LEASE_MS,
  removeResumable,
  renewLockResumable,
  ResumableGone,
  ResumableLockLost,
  sweepExpiredResumables,
  tryLockResumable,
  unlockResumable,
  type ResumableContext,
  type ResumableTarget,
} from '../services/resumable-uploads.js';
import type { ResumableUploadRow } from '../../db/schema.js';

/** The tus extensions offered, in the order OPTIONS lists them. */
export const TUS_EXTENSIONS = ['creation', 'creation-with-upload', 'termination', 'expiration'];

/** What @tus/server throws to answer with a status; the route turns it into the envelope. */
export interface TusError {
  status_code: number;
  body: string;
}

export const uploadLocked: TusError = { status_code: 423, body: resumableMessages.locked };

/**
 * @tus/server's view of the resumable-upload service: state in PostgreSQL, bytes in the storage
 * backend. The file store of @tus/file-store would keep state in JSON files of one instance,
 * acknowledge bytes before they are on disk, and expire uploads from their creation: none of
 * which the service may do.
 */
export class ServiceDataStore extends DataStore {
  /**
   * Uploads completed by a request still being answered: @tus/server reads the upload again after
   * its completion hook (to decide Upload-Expires), when its state is already gone.
   */
  readonly #justCompleted = new Map<string, Upload>();

  constructor(
    private readonly ctx: ResumableContext,
    /** Filled by the creation's validation, which runs before @tus/server sees the request. */
    private readonly targetOf: (upload: Upload) => ResumableTarget | undefined,
    /** Told how many bytes each request added. */
    private readonly received: (bytes: number) => void,
    /** The locks this instance holds, with the rows they read. */
    private readonly locks: LeaseLocker,
  ) {
    super();
    this.extensions = [...TUS_EXTENSIONS];
  }

  override async create(upload: Upload): Promise<Upload> {
    const target = this.targetOf(upload);
    if (!target) throw ERRORS.UNKNOWN_ERROR;
    const row = await createResumable(this.ctx, upload.id, target);
    upload.creation_date = row.created_at.toISOString();
    return upload;
  }

  /** Until forgetCompleted(), getUpload() reports `upload` as complete. */
  rememberCompleted(upload: Upload): void {
    this.#justCompleted.set(upload.id, new Upload({ id: upload.id, size: upload.size, offset: upload.size ?? 0, metadata: upload.metadata }));
  }

  forgetCompleted(id: string): void {
    this.#justCompleted.delete(id);
  }

  override async getUpload(id: string): Promise<Upload> {
    const completed = this.#justCompleted.get(id);
    if (completed) return completed;
    const held = this.locks.held(id);
    const row = await this.#rowOf(id, held);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    if (row.expires_at.getTime() <= Date.now()) throw ERRORS.FILE_NO_LONGER_EXISTS;
    const upload = new Upload({
      id,
      size: row.size_bytes,
      offset: row.offset_bytes,
      metadata: JSON.parse(row.metadata) as Record<string, string | null>,
      creation_date: this.#creationDate(row.expires_at),
    });
    if (held) held.upload = upload;
    return upload;
  }

  /** @tus/server dates expiry from creation_date; here an upload expires after its last PATCH. */
  #creationDate(expiresAt: Date): string {
    return new Date(expiresAt.getTime() - this.ctx.expiryMs).toISOString();
  }

  /** The row the request's lock read, or the committed row when it holds none. */
  async #rowOf(id: string, held: HeldLock | undefined): Promise<ResumableUploadRow | undefined> {
    return held?.row ?? findResumable(this.ctx.db, id);
  }

  override async write(source: Readable, id: string, offset: number): Promise<number> {
    const held = this.locks.held(id);
    const row = await this.#rowOf(id, held);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    if (row.offset_bytes !== offset) throw ERRORS.INVALID_OFFSET;
    const { offset: newOffset, expiresAt } = await appendResumable(this.ctx, row, source, { lockToken: held?.token, bodyBytes: held?.bodyBytes }).catch(
      (error: unknown) => {
        if (error instanceof ResumableGone) throw ERRORS.FILE_NOT_FOUND;
        // The client asks HEAD for the offset and sends the rest again, as after any 423.
        throw error instanceof ResumableLockLost ? uploadLocked : error;
      },
    );
    if (held) {
      // The answer's Upload-Expires: the expiry this PATCH moved on.
      if (held.upload) held.upload.creation_date = this.#creationDate(expiresAt);
      held.released();
    }
    this.received(newOffset - offset);
    return newOffset;
  }

  override async remove(id: string): Promise<void> {
    if (!(await findResumable(this.ctx.db, id))) throw ERRORS.FILE_NOT_FOUND;
    await removeResumable(this.ctx, [id]);
  }

  override async deleteExpired(): Promise<number> {
    return sweepExpiredResumables(this.ctx);
  }

  override getExpiration(): number {
    return this.ctx.expiryMs;
  }
}

/** How often a waiting request tries the lock again. */
const LOCK_POLL_MS = 200;

/** A lock this instance holds, and what was read under it. */
interface HeldLock {
  readonly token: string;
  /** The row as the lock read it: no other request changes it while the lock holds. */
  readonly row: ResumableUploadRow;
  /** The upload @tus/server works on, once it has read it. */
  upload?: Upload;
  /** The request's Content-Length, when it declares one. */
  readonly bodyBytes?: number;
  /** The append's update gave the lock back: unlock() has nothing left to do in the database. */
  released(): void;
}

/**
 * One writer per upload across every instance: a lease in the upload's row, renewed while the
 * request runs. A second request waits for the first to finish (up to one lease, enough for an
 * instance that died holding it) and then gets 423; it never cuts the first one off.
 */
export class LeaseLocker implements Locker {
  readonly #held = new Map<string, HeldLock>();

  constructor(private readonly ctx: ResumableContext) {}

  /** The lock a request of this instance holds on the upload, if any. */
  held(id: string): HeldLock | undefined {
    return this.#held.get(id);
  }

  /** The locker of one request, whose locks know the length of its body. */
  forRequest(req: Request): Locker {
    const declared = req.headers.get('content-length');
    const bodyBytes = declared !== null && /^\d+$/.test(declared) ? Number(declared) : undefined;
    return { newLock: (id) => this.newLock(id, bodyBytes) };
  }

  newLock(id: string, bodyBytes?: number): Lock {
    const { db } = this.ctx;
    const token = randomBytes(16).toString('hex');
    let renewal: NodeJS.Timeout | undefined;
    let inDatabase = false;
    const forget = () => {
      clearInterval(renewal);
      if (this.#held.get(id)?.token === token) this.#held.delete(id);
    };
    return {
      lock: async (signal) => {
        const deadline = Date.now() + LOCK_LEASE_MS + 2 * LOCK_POLL_MS;
        let outcome: Awaited<ReturnType<typeof tryLockResumable>>;
        for (;;) {
          outcome = await tryLockResumable(db, id, token);
          // A missing upload needs no lock: the handler answers 404 for it.
          if (outcome !== 'busy') break;
          if (signal.aborted) throw ERRORS.ABORTED;
          if (Date.now() > deadline) throw uploadLocked;
          await sleep(LOCK_POLL_MS);
        }
        if (outcome === 'missing') return;
        inDatabase = true;
        renewal = setInterval(() => {
          renewLockResumable(db, id, token).catch((error: unknown) => this.ctx.log.warn({ err: error }, 'resumable upload lock not renewed'));
        }, LOCK_LEASE_MS / 3);
        renewal.unref();
        // An upload being completed is not found: its row is read again, and the handler answers 404.
        if (outcome.completing_since === null) {
          this.#held.set(id, {
            token,
            row: outcome,
            bodyBytes,
            released: () => {
              inDatabase = false;
              forget();
            },
          });
        }
      },
      unlock: async () => {
        forget();
        if (inDatabase) await unlockResumable(db, id, token);
        inDatabase = false;
      },
    };
  }
}

/** HEAD reads a committed offset: it needs no lock, so a client resuming is never held up by its own dead request. */
export const noLocker: Locker = { newLock: () => ({ lock: async () => {}, unlock: async () => {} }) };
