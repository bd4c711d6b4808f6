import type { ServiceContext } from '../services/context.js';
import { LEASE_HEARTBEAT_MS, renewLease, sweepDeadInstances } from '../services/leases.js';
import type { Job } from './schedule.js';

export function leaseHeartbeatJob(ctx: ServiceContext, instanceId: string): Job {
  return { name: 'lease-heartbeat', intervalMs: LEASE_HEARTBEAT_MS, runAtStart: false, run: () => renewLease(ctx.db, instanceId) };
}

/** Every instance sweeps; removing a dead instance's leftovers twice is harmless. */
export function leaseSweepJob(ctx: ServiceContext, instanceId: string): Job {
  return {
    name: 'lease-sweep',
    intervalMs: LEASE_HEARTBEAT_MS,
    runAtStart: true,
    run: async () => {
      const { instances } = await sweepDeadInstances(ctx.db, ctx.storage, instanceId);
      if (instances.length === 0) return undefined;
      ctx.log.info({ instances }, 'removed what dead instances left');
      return { instances };
    },
  };
}
