import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { BlobStore } from '../storage/blob-store.js';

/**
 * Each running instance holds a lease: a row whose heartbeat it renews. Its temporary writes are
 * named by its instance id, so when the heartbeat stops (kill -9, a lost machine) any live instance
 * can tell whose leftovers they are and remove them, without ever touching a live instance's.
 * Times are the database's, so the instances' clocks need not agree.
 */
export const LEASE_HEARTBEAT_MS = 10_000;
/** Three missed heartbeats: an instance this quiet is dead. */
export const LEASE_LAPSE_SECONDS = 30;

/** Claims (or renews) the lease of `instanceId`. */
export async function renewLease(db: Kysely<Database>, instanceId: string): Promise<void> {
  await db
    .insertInto('instance_leases')
    .values({ instance_id: instanceId })
    .onConflict((c) => c.column('instance_id').doUpdateSet({ heartbeat_at: sql`now()` }))
    .execute();
}

/** Gives the lease up on a clean shutdown, once nothing of the instance is left in the store. */
export async function releaseLease(db: Kysely<Database>, instanceId: string): Promise<void> {
  await db.deleteFrom('instance_leases').where('instance_id', '=', instanceId).execute();
}

/** Of `instanceIds`, those without a live lease: lapsed, or never or no longer held. */
async function deadInstances(db: Kysely<Database>, instanceIds: readonly string[]): Promise<string[]> {
  if (instanceIds.length === 0) return [];
  const live = await db
    .selectFrom('instance_leases')
    .select('instance_id')
    .where('instance_id', 'in', instanceIds)
    .where('heartbeat_at', '>', sql<Date>`now() - make_interval(secs => ${LEASE_LAPSE_SECONDS})`)
    .execute();
  const alive = new Set(live.map((row) => row.instance_id));
  return instanceIds.filter((id) => !alive.has(id));
}

export interface LeaseSweepResult {
  /** Instances whose leftovers were removed. */
  instances: string[];
}

/**
 * Removes the incomplete writes of every instance without a live lease, then the lapsed leases
 * themselves (only if still lapsed, so an instance that came back keeps its row). `self` is never
 * judged: this instance is alive by definition.
 */
export async function sweepDeadInstances(db: Kysely<Database>, storage: BlobStore, self: string): Promise<LeaseSweepResult> {
  const owners = new Set<string>();
  for await (const page of storage.listIncompleteWrites()) {
    for (const write of page) if (write.instanceId !== undefined && write.instanceId !== self) owners.add(write.instanceId);
  }
  // A store that cannot tell a write's instance from its listing is asked by lapsed lease.
  const lapsed = await db
    .selectFrom('instance_leases')
    .select('instance_id')
    .where('instance_id', '!=', self)
    .where('heartbeat_at', '<=', sql<Date>`now() - make_interval(secs => ${LEASE_LAPSE_SECONDS})`)
    .execute();
  for (const row of lapsed) owners.add(row.instance_id);
  const dead = await deadInstances(db, [...owners]);
  for (const instanceId of dead) await storage.removeIncompleteWritesOf(instanceId);
  await db
    .deleteFrom('instance_leases')
    .where('instance_id', '!=', self)
    .where('heartbeat_at', '<=', sql<Date>`now() - make_interval(secs => ${LEASE_LAPSE_SECONDS})`)
    .execute();
  return { instances: dead };
}

/**
 * At start-up, before this instance writes anything: what a previous process with the same instance
 * id left (it was killed, and this is its restart) is removed, then the lease is taken.
 */
export async function takeOverLease(db: Kysely<Database>, storage: BlobStore, instanceId: string): Promise<void> {
  await storage.removeIncompleteWritesOf(instanceId);
  await renewLease(db, instanceId);
}
