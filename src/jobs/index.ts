import type { Metrics } from '../metrics.js';
import type { ServiceContext } from '../services/context.js';
import type { DownloadCounter } from '../services/download-counter.js';
import type { ImageVariants } from '../services/image-variants.js';
import { downloadFlushJob } from './download-flush.js';
import { expirySweepJob } from './expiry-sweep.js';
import { imageTouchFlushJob } from './image-touches.js';
import { leaseHeartbeatJob, leaseSweepJob } from './leases.js';
import { orphanSweepJob } from './orphan-sweep.js';
import type { Job } from './schedule.js';

/** The background jobs every instance runs. */
export function serviceJobs(
  ctx: ServiceContext,
  counter: DownloadCounter,
  metrics: Metrics,
  { sweepIntervalSeconds, instanceId }: { sweepIntervalSeconds: number; instanceId: string },
  images?: ImageVariants,
): Job[] {
  return [
    ...(images ? [imageTouchFlushJob(images)] : []),
    leaseHeartbeatJob(ctx, instanceId),
    leaseSweepJob(ctx, instanceId),
    orphanSweepJob(ctx),
    expirySweepJob(ctx, sweepIntervalSeconds, { runs: metrics.sweeperRuns, filesRemoved: metrics.sweeperFilesRemoved }),
    downloadFlushJob(counter),
  ];
}
