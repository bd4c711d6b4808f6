import { databaseError } from '../../db/errors.js';

/** Whether an error says the database cannot be reached right now, as db/errors.ts judges the driver's errors. */
export function isDatabaseUnreachable(error: unknown): boolean {
  return databaseError(error)?.kind === 'connection-lost';
}
