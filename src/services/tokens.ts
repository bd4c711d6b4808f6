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

type TokenRows = Promise<Array<{ app_id: string }>>;
/** Per database: lookups of a token that have been asked for but not sent yet. */
const unsent = new WeakMap<Kysely<Database>, Map<string, TokenRows>>();

/**
 * The rows for a token hash, shared by the requests that ask for it before the query is sent: a
 * burst of requests with one token (hundreds at once from one app) costs the pool one query rather
 * than one each. The query goes out once this turn of the event loop has read its requests
 * (setImmediate), and nobody joins it afterwards, so an answer never predates its request: a token
 * revoked before a request arrived is refused.
 */
function lookUp(db: Kysely<Database>, tokenHash: string): TokenRows {
  let lookups = unsent.get(db);
  if (!lookups) unsent.set(db, (lookups = new Map()));
  let rows = lookups.get(tokenHash);
  if (!rows) {
    const waiting = lookups;
    rows = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      waiting.delete(tokenHash);
      return tokenApp(db, tokenHash, new Date());
    });
    lookups.set(tokenHash, rows);
  }
  return rows;
}

/** The app a live token belongs to; a bad, expired or revoked token is refused. */
export async function appForToken(db: Kysely<Database>, accessToken: string): Promise<string> {
  const [row] = await lookUp(db, hashSecret(accessToken));
  if (!row) throw refused.invalidToken();
  return row.app_id;
}

/** Removes tokens that have expired; returns how many. */
export async function deleteExpiredTokens(db: Kysely<Database>): Promise<number> {
  const result = await db.deleteFrom('access_tokens').where('expires_at', '<=', new Date()).executeTakeFirst();
  return Number(result.numDeletedRows);
}
