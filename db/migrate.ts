import { Migrator, type Kysely } from 'kysely';
import { migrations } from './migrations/index.js';

/** Brings the schema up to date; the migrator's lock lets several instances start at once. */
export async function migrateToLatest(db: Kysely<unknown>): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations },
    // Numbered migrations land from parallel work in any order; each is independent of the others.
    allowUnorderedMigrations: true,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`Database migration ${failed ?? ''} failed: ${(error as Error).message ?? String(error)}`);
  }
}
