import type { Kysely } from 'kysely';
import type { BootstrapApp } from '../config.js';
import type { Database } from '../../db/schema.js';
import { refused } from '../errors.js';
import { dropBytes, type ServiceContext } from './context.js';
import { purgeBucketFiles } from './purge.js';
import { dropResumableBytes, takeResumablesOf } from './resumable-uploads.js';
import { hashSecret, randomSecret, sameSecret } from './secret-hashing.js';

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

/**
 * Removes the app with its buckets, files, tokens, download secrets and incomplete uploads (into its
 * buckets, and its own anywhere), then their bytes.
 * `tokenAppId` is the app the caller's token belongs to: an app may delete only itself. Each
 * bucket's files go in batches first (see purgeBucketFiles), then the app, in one short
 * transaction with whatever was created or uploaded meanwhile.
 */
export async function deleteApp(ctx: ServiceContext, tokenAppId: string, appId: string): Promise<void> {
  if (tokenAppId !== appId) throw refused.notYourApp();
  const buckets = await ctx.db.selectFrom('buckets').select('bucket_id').where('app_id', '=', appId).orderBy('bucket_id').execute();
  for (const bucket of buckets) await purgeBucketFiles(ctx, bucket.bucket_id);
  const { storageKeys, uploadIds } = await ctx.db.transaction().execute(async (trx) => {
    // Locks make concurrent bucket creation, token issue and uploads into its buckets wait and then
    // fail on their foreign keys, so no file row escapes the key collection below.
    const app = await trx.selectFrom('apps').select('app_id').where('app_id', '=', appId).forUpdate().executeTakeFirst();
    if (!app) throw refused.unknownApp();
    const locked = await trx.selectFrom('buckets').select('bucket_id').where('app_id', '=', appId).forUpdate().execute();
    const files = await trx
      .deleteFrom('files')
      .where('bucket_id', 'in', (eb) => eb.selectFrom('buckets').select('bucket_id').where('app_id', '=', appId))
      .returning('storage_key')
      .execute();
    // Into its buckets, and its own into other apps' buckets.
    const uploadIds = await takeResumablesOf(trx, { bucketIds: locked.map((bucket) => bucket.bucket_id), appId });
    // Buckets, tokens and download secrets go with the app through ON DELETE CASCADE.
    await trx.deleteFrom('apps').where('app_id', '=', appId).execute();
    return { storageKeys: files.map((file) => file.storage_key), uploadIds };
  });
  await dropBytes(ctx, storageKeys);
  await dropResumableBytes(ctx, uploadIds);
}
