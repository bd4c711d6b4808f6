import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A random value with `bytes` bytes of entropy, URL-safe. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * Secrets here are long random values, so a fast hash suffices (no brute force to slow down);
 * only the hash is stored, and lookups by hash take the same time however much of a guess is right.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function sameSecret(secret: string, expectedHash: string): boolean {
  const actual = Buffer.from(hashSecret(secret), 'hex');
  const expected = Buffer.from(expectedHash, 'hex');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
