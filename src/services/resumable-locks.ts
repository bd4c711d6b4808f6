import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import type { Database, ResumableUploadRow } from '../../db/schema.js';
import { resumableRefused } from '../errors.js';
import type { Logger } from './context.js';
import { RESUMABLE_UPLOAD_COLUMNS, findResumable } from './resumable-rows.js';

/**
 * One writer per upload across every instance: a lease in the upload's row, renewed while the
 * request runs. A second request waits for the first to finish (up to one lease, enough for an
 * instance that died holding it) and then gets 423; it never cuts the first one off.
 */

/** How long a lock holds without renewal: an instance that dies mid-PATCH blocks its upload at most this long. */
export const LOCK_LEASE_MS = 10_000;
/** How often a waiting request tries the lock again. */
const LOCK_POLL_MS = 200;
const leaseEnd = sql<Date>`now() + ${`${LOCK_LEASE_MS} milliseconds`}::interval`;

/**
 * Takes the upload's lock if it is free (or its lease ran out); the row when taken. A lease in the
 * row rather than a held connection or advisory lock: a PATCH streams for minutes, and the
 * embedded database has a single connection.
 */
export async function tryLockResumable(db: Kysely<Database>, uploadId: string, lockToken: string): Promise<ResumableUploadRow | 'busy' | 'missing'> {
  const row = await db
    .updateTable('resumable_uploads')
    .set({ lock_token: lockToken, locked_until: leaseEnd, lock_count: sql<number>`lock_count + 1` })
    .where('upload_id', '=', uploadId)
    .where((eb) => eb.or([eb('lock_token', 'is', null), eb('locked_until', '<', sql<Date>`now()`), eb('lock_token', '=', lockToken)]))
    .returning(RESUMABLE_UPLOAD_COLUMNS)
    .executeTakeFirst();
  if (row) return row;
  return (await findResumable(db, uploadId)) ? 'busy' : 'missing';
}

/** Extends a lock the token still holds; never takes one that was released meanwhile. */
async function renewLockResumable(db: Kysely<Database>, uploadId: string, lockToken: string): Promise<void> {
  await db.updateTable('resumable_uploads').set({ locked_until: leaseEnd }).where('upload_id', '=', uploadId).where('lock_token', '=', lockToken).execute();
}

async function unlockResumable(db: Kysely<Database>, uploadId: string, lockToken: string): Promise<void> {
  await db
    .updateTable('resumable_uploads')
    .set({ lock_token: null, locked_until: null })
    .where('upload_id', '=', uploadId)
    .where('lock_token', '=', lockToken)
    .execute();
}

/** A lock a request holds, and the row as it read it: no other request changes it while the lock holds. */
export interface HeldLock {
  readonly token: string;
  readonly row: ResumableUploadRow;
  /** The append's update gave the lock back in its own commit: nothing is left to do in the database. */
  givenBack(): void;
  /** Gives the lock back if it is still held; stops renewing it. */
  release(): Promise<void>;
}

/**
 * Waits for the upload's lock and holds it, renewing its lease, until release(). Refuses with 404
 * for an upload that does not exist or is being turned into a file, with 423 when another request
 * held it for longer than a lease, and stops waiting once `signal` aborts (the client went away).
 */
export async function holdResumableLock(ctx: { db: Kysely<Database>; log: Logger }, uploadId: string, signal?: AbortSignal): Promise<HeldLock> {
  const token = randomBytes(16).toString('hex');
  const deadline = Date.now() + LOCK_LEASE_MS + 2 * LOCK_POLL_MS;
  let outcome: Awaited<ReturnType<typeof tryLockResumable>>;
  for (;;) {
    outcome = await tryLockResumable(ctx.db, uploadId, token);
    if (outcome !== 'busy') break;
    signal?.throwIfAborted();
    if (Date.now() > deadline) throw resumableRefused.locked();
    await sleep(LOCK_POLL_MS);
  }
  if (outcome === 'missing') throw resumableRefused.notFound();
  let held = true;
  const renewal = setInterval(() => {
    renewLockResumable(ctx.db, uploadId, token).catch((error: unknown) => ctx.log.warn({ err: error }, 'resumable upload lock not renewed'));
  }, LOCK_LEASE_MS / 3);
  renewal.unref();
  const lock: HeldLock = {
    token,
    row: outcome,
    givenBack: () => {
      held = false;
      clearInterval(renewal);
    },
    release: async () => {
      clearInterval(renewal);
      if (!held) return;
      held = false;
      await unlockResumable(ctx.db, uploadId, token);
    },
  };
  if (outcome.completing_since !== null) {
    await lock.release();
    throw resumableRefused.notFound();
  }
  return lock;
}
