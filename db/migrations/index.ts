import type { Migration } from 'kysely';
import * as m0001 from './0001_initial.js';

/** Imported, not read from a folder, so the same list runs from src and from dist. */
export const migrations: Record<string, Migration> = {
  '0001_initial': m0001,
};
