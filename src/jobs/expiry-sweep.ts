import type { Counter } from 'prom-client';
import type { ServiceContext } from '../services/context.js';
import { sweepExpired } from '../services/expiry.js';
import type { Job } from './schedule.js';

export interface SweepMetrics {
  runs: Counter<'outcome'>;
  filesRemoved: Counter;
}

/**
 * Every instance sweeps; they share the work safely. Not at start-up: expired files are invisible
 * already, and a fleet restarting together need not sweep all at once.
 */
export function expirySweepJob(ctx: ServiceContext, intervalSeconds: number, metrics: SweepMetrics): Job {
  return {
    name: 'expiry-sweep',
    intervalMs: intervalSeconds * 1000,
    runAtStart: false,
    run: async () => {
      try {
        const result = await sweepExpired(ctx);
        metrics.runs.inc({ outcome: 'ok' });
        metrics.filesRemoved.inc(result.files);
        return result;
      } catch (error) {
        metrics.runs.inc({ outcome: 'failed' });
        throw error;
      }
    },
  };
}
