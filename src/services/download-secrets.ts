import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isDatabaseError } from '../../db/errors.js';
import { refused } from '../errors.js';
import { DOWNLOADABLE, type Downloadable } from './downloadable-files.js';
import { isLive } from './files.js';
import { hashSecret, randomSecret } from './secret-hashing.js';

/** Longer values cannot be secrets this service made; they are refused without a lookup. */
const MAX_SECRET_LENGTH = 128;

/**
 * Creates a secret that downloads one live file of the app's own buckets `maxUses` times, whether
 * or not the bucket is OpenToRead. Only its hash is stored; the value is returned once.
 */
export async function generateDownloadSecret(db: Kysely<Database>, appId: string, fileKey: number, maxUses: number): Promise<string> {
  const value = randomSecret(32);
  // One statement: the file is checked and the secret stored together, so no secret names a file
  // that was deleted in between (its foreign key would refuse it).
  const inserted = await db
    .insertInto('download_secrets')
    .columns(['secret_hash', 'file_key', 'app_id', 'uses_left'])
    .expression((eb) =>
      eb
        .selectFrom('files')
        .innerJoin('buckets', 'buckets.bucket_id', 'files.bucket_id')
        .select([sql.val(hashSecret(value)).as('secret_hash'), 'files.file_key', 'buckets.app_id', sql.val(maxUses).as('uses_left')])
        .where('files.file_key', '=', fileKey)
        .where('buckets.app_id', '=', appId)
        .where(isLive()),
    )
    .returning('file_key')
    .executeTakeFirst()
    .catch((error: unknown) => {
      if (isDatabaseError(error, 'foreign-key-violation')) return undefined;
      throw error;
    });
  if (inserted) return value;
  const exists = await db.selectFrom('files').select('file_key').where('file_key', '=', fileKey).where(isLive()).executeTakeFirst();
  throw exists ? refused.notYourBucket() : refused.fileNotFound();
}

/**
 * Takes one use of the secret and returns its file, in one statement: of two requests racing for
 * the last use, exactly one gets the file (the other waits for the row lock, then finds no use
 * left). A used-up or unknown secret, or one whose file has expired or been deleted, gives
 * undefined and uses nothing.
 */
export async function useDownloadSecret(db: Kysely<Database>, secret: string): Promise<Downloadable | undefined> {
  if (secret.length > MAX_SECRET_LENGTH) return undefined;
  return db
    .updateTable('download_secrets')
    .from('files')
    .set((eb) => ({ uses_left: eb('download_secrets.uses_left', '-', 1) }))
    .whereRef('files.file_key', '=', 'download_secrets.file_key')
    .where('download_secrets.secret_hash', '=', hashSecret(secret))
    .where('download_secrets.uses_left', '>', 0)
    .where(isLive())
    .returning(DOWNLOADABLE)
    // A secret is made by the app that owns its file.
    .returning('download_secrets.app_id as appId')
    .executeTakeFirst();
}

/**
 * Gives back the use a GET took when its answer was refused for want of capacity (a render queue
 * full, an app over its turns): the request is as if it had not been made.
 */
export async function returnDownloadSecretUse(db: Kysely<Database>, secret: string): Promise<void> {
  await db
    .updateTable('download_secrets')
    .set((eb) => ({ uses_left: eb('uses_left', '+', 1) }))
    .where('secret_hash', '=', hashSecret(secret))
    .execute();
}

/** The secret's file while it has uses left, without taking one (for HEAD). */
export async function peekDownloadSecret(db: Kysely<Database>, secret: string): Promise<Downloadable | undefined> {
  if (secret.length > MAX_SECRET_LENGTH) return undefined;
  return db
    .selectFrom('download_secrets')
    .innerJoin('files', 'files.file_key', 'download_secrets.file_key')
    .select(DOWNLOADABLE)
    .select('download_secrets.app_id as appId')
    .where('download_secrets.secret_hash', '=', hashSecret(secret))
    .where('download_secrets.uses_left', '>', 0)
    .where(isLive())
    .executeTakeFirst();
}
