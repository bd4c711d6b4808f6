import type { Kysely } from 'kysely';
import { migrateToLatest } from '../../db/migrate.js';
import type { Database } from '../../db/schema.js';
import type { Config } from '../config.js';
import { createFirstStartApp, ensureApps, type AppCredentials } from './apps.js';

/**
 * Brings the database to the state the service needs: the latest schema, the configured apps,
 * and on the very first start with nothing configured, one app for the newcomer (returned once).
 */
export async function prepareDatabase(db: Kysely<Database>, config: Config): Promise<AppCredentials | undefined> {
  await migrateToLatest(db as Kysely<unknown>);
  await ensureApps(db, config.bootstrapApps);
  if (config.bootstrapApps.length > 0 || config.adminKey) return undefined;
  return createFirstStartApp(db);
}
