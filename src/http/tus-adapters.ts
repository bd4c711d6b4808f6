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
  sweepExpiredResumables,
  tryLockResumable,
  unlockResumable,
  type ResumableContext,
  type ResumableTarget,
} from '../services/resumable-uploads.js';

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
    const row = await findResumable(this.ctx.db, id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    if (row.expires_at.getTime() <= Date.now()) throw ERRORS.FILE_NO_LONGER_EXISTS;
    return new Upload({
      id,
      size: row.size_bytes,
      offset: row.offset_bytes,
      metadata: JSON.parse(row.metadata) as Record<string, string | null>,
      // @tus/server dates expiry from creation_date; here an upload expires after its last PATCH.
      creation_date: new Date(row.expires_at.getTime() - this.ctx.expiryMs).toISOString(),
    });
  }

  override async write(source: Readable, id: string, offset: number): Promise<number> {
    const row = await findResumable(this.ctx.db, id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    if (row.offset_bytes !== offset) throw ERRORS.INVALID_OFFSET;
    const newOffset = await appendResumable(this.ctx, row, source);
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

/**
 * One writer per upload across every instance: a lease in the upload's row, renewed while the
 * request runs. A second request waits for the first to finish (up to one lease, enough for an
 * instance that died holding it) and then gets 423; it never cuts the first one off.
 */
export class LeaseLocker implements Locker {
  constructor(private readonly ctx: ResumableContext) {}

  newLock(id: string): Lock {
    const { db } = this.ctx;
    const token = randomBytes(16).toString('hex');
    let renewal: NodeJS.Timeout | undefined;
    return {
      lock: async (signal) => {
        const deadline = Date.now() + LOCK_LEASE_MS + 2 * LOCK_POLL_MS;
        for (;;) {
          const outcome = await tryLockResumable(db, id, token);
          // A missing upload needs no lock: the handler answers 404 for it.
          if (outcome !== 'busy') break;
          if (signal.aborted) throw ERRORS.ABORTED;
          if (Date.now() > deadline) throw uploadLocked;
          await sleep(LOCK_POLL_MS);
        }
        renewal = setInterval(() => {
          tryLockResumable(db, id, token).catch((error: unknown) => this.ctx.log.warn({ err: error }, 'resumable upload lock not renewed'));
        }, LOCK_LEASE_MS / 3);
        renewal.unref();
      },
      unlock: async () => {
        clearInterval(renewal);
        await unlockResumable(db, id, token);
      },
    };
  }
}

/** HEAD reads a committed offset: it needs no lock, so a client resuming is never held up by its own dead request. */
export const noLocker: Locker = { newLock: () => ({ lock: async () => {}, unlock: async () => {} }) };
