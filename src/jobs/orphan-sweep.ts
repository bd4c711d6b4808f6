import type { ServiceContext } from '../services/context.js';
import { sweepOrphans, sweepOrphanVariants } from '../services/orphans.js';
import type { Job } from './schedule.js';

const ORPHAN_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

export function orphanSweepJob(ctx: ServiceContext): Job {
  return {
    name: 'orphan-sweep',
    intervalMs: ORPHAN_SWEEP_INTERVAL_MS,
    runAtStart: true,
    run: async () => ({ variantsRemoved: await sweepOrphanVariants(ctx), ...(await sweepOrphans(ctx)) }),
  };
}
