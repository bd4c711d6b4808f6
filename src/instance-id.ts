import { randomBytes } from 'node:crypto';

/** Instance ids name temporary writes in every store, so they keep to a charset any store accepts. */
export const INSTANCE_ID = /^[a-z0-9-]{1,63}$/;

/** A fresh instance id, when none is configured: 48 random bits. */
export function newInstanceId(): string {
  return randomBytes(6).toString('hex');
}
