import type { DownloadCounter } from '../services/download-counter.js';
import type { Job } from './schedule.js';

/** Other instances see a download within about this long. */
export const DOWNLOAD_FLUSH_INTERVAL_MS = 1000;

export function downloadFlushJob(counter: DownloadCounter): Job {
  return {
    name: 'download-counter-flush',
    intervalMs: DOWNLOAD_FLUSH_INTERVAL_MS,
    runAtStart: false,
    // Nothing to report on the many idle ticks.
    run: async () => (await counter.flush()) || undefined,
  };
}
