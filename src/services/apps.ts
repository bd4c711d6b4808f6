import type { Kysely } from 'kysely';
import type { BootstrapApp } from '../config.js';
import type { Database } from '../../db/schema.js';
import { hashSecret, randomSecret, sameSecret } from './secrets.js';

export interface AppCredentials {
  appId: string;
  appSecret: string;
}

/** Compared against when the AppId is unknown, so a wrong AppId costs as much as a wrong secret. */
const UNKNOWN_APP_HASH = hashSecret(randomSecret());
const FIRST_START_KEY = 'first_start_app_created';

export async function createApp(db: Kysely<Database>): Promise<AppCredentials> {
  const credentials = { appId: randomSecret(16), appSecret: randomSecret(32) };
  await db
    .insertInto('apps')
    .values({ app_id: credentials.appId, secret_hash: hashSecret(credentials.appSecret) })
    .execute();
  return credentials;
}

/** Makes sure the configured apps exist with the configured secrets; safe to run on every instance. */
export async function ensureApps(db: Kysely<Database>, apps: readonly BootstrapApp[]): Promise<void> {
  for (const app of apps) {
    await db
      .insertInto('apps')
      .values({ app_id: app.appId, secret_hash: hashSecret(app.appSecret) })
      .onConflict((oc) => oc.column('app_id').doUpdateSet({ secret_hash: hashSecret(app.appSecret) }))
      .execute();
  }
}

/**
 * On the very first start of an empty database, creates one app so a newcomer can begin at once.
 * A marker row makes this happen once per database, even with several instances starting together.
 */
export async function createFirstStartApp(db: Kysely<Database>): Promise<AppCredentials | undefined> {
  return db.transaction().execute(async (trx) => {
    const marked = await trx
      .insertInto('service_state')
      .values({ key: FIRST_START_KEY, value: new Date().toISOString() })
      .onConflict((oc) => oc.column('key').doNothing())
      .returning('key')
      .executeTakeFirst();
    if (!marked) return undefined;
    const existing = await trx.selectFrom('apps').select('app_id').limit(1).executeTakeFirst();
    if (existing) return undefined;
    return createApp(trx);
  });
}

export async function verifyAppSecret(db: Kysely<Database>, appId: string, appSecret: string): Promise<boolean> {
  const row = await db.selectFrom('apps').select('secret_hash').where('app_id', '=', appId).executeTakeFirst();
  const matches = sameSecret(appSecret, row?.secret_hash ?? UNKNOWN_APP_HASH);
  return row !== undefined && matches;
}
