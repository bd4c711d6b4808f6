import { sweepExpiredResumables, sweepOrphanResumables } from '../services/resumable-sweeps.js';
import type { ResumableContext } from '../services/resumable-uploads.js';
import type { Job } from './schedule.js';

/**
 * Incomplete resumable uploads past their expiry lose their state and bytes, and bytes a crash left
 * without state are removed, on every instance, on the sweep interval.
 */
export function resumableExpirySweepJob(ctx: ResumableContext, intervalSeconds: number): Job {
  return {
    name: 'resumable-expiry-sweep',
    intervalMs: intervalSeconds * 1000,
    runAtStart: false,
    run: async () => ({ expired: await sweepExpiredResumables(ctx), orphans: await sweepOrphanResumables(ctx) }),
  };
}
