import type { Kysely } from 'kysely';
import { compiledOnce } from '../../db/compiled-once.js';
import type { Database } from '../../db/schema.js';
import { refused } from '../errors.js';
import { hashSecret, randomSecret } from './secret-hashing.js';

export interface IssuedToken {
  accessToken: string;
  deadTime: Date;
}

/**
 * Tokens live in the database, so every instance accepts them and deleting the app (which
 * cascades to its tokens) revokes them at once. Only the hash is stored.
 */
export async function issueToken(db: Kysely<Database>, appId: string, lifetimeSeconds: number): Promise<IssuedToken> {
  const accessToken = randomSecret(32);
  const deadTime = new Date(Date.now() + lifetimeSeconds * 1000);
  await db
    .insertInto('access_tokens')
    .values({ token_hash: hashSecret(accessToken), app_id: appId, expires_at: deadTime })
    .execute();
  return { accessToken, deadTime };
}

const tokenApp = compiledOnce((db, tokenHash: string, now: Date) =>
  db.selectFrom('access_tokens').select('app_id').where('token_hash', '=', tokenHash).where('expires_at', '>', now),
);

/** The app a live token belongs to; a bad, expired or revoked token is refused. */
export async function appForToken(db: Kysely<Database>, accessToken: string): Promise<string> {
  const [row] = await tokenApp(db, hashSecret(accessToken), new Date());
  if (!row) throw refused.invalidToken();
  return row.app_id;
}

/** Removes tokens that have expired; returns how many. */
export async function deleteExpiredTokens(db: Kysely<Database>): Promise<number> {
  const result = await db.deleteFrom('access_tokens').where('expires_at', '<=', new Date()).executeTakeFirst();
  return Number(result.numDeletedRows);
}
