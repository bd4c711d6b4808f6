import type { Logger } from '../services/context.js';

export interface Job {
  name: string;
  intervalMs: number;
  /** Run once as soon as the service is ready, then every interval. */
  runAtStart: boolean;
  run(): Promise<unknown>;
}

/**
 * Runs background jobs on timers that never overlap a job with itself and never keep the process
 * alive; a failed run is logged and retried at the next interval.
 */
export function startJobs(jobs: readonly Job[], log: Logger): () => Promise<void> {
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<unknown>>();
  let stopped = false;

  for (const job of jobs) {
    let busy = false;
    const tick = () => {
      if (busy || stopped) return;
      busy = true;
      const run = job
        .run()
        .then((result) => {
          if (result !== undefined) log.debug({ job: job.name, result }, 'job ran');
        })
        .catch((error: unknown) => log.error({ err: error, job: job.name }, 'job failed'))
        .finally(() => {
          busy = false;
          running.delete(run);
        });
      running.add(run);
    };
    if (job.runAtStart) setImmediate(tick);
    const timer = setInterval(tick, job.intervalMs);
    timer.unref();
    timers.push(timer);
  }

  return async () => {
    stopped = true;
    for (const timer of timers) clearInterval(timer);
    await Promise.allSettled([...running]);
  };
}
