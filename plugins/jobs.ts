import fp from 'fastify-plugin';
import { downloadFlushJob } from '../src/jobs/download-flush.js';
import { expirySweepJob } from '../src/jobs/expiry-sweep.js';
import { orphanSweepJob } from '../src/jobs/orphan-sweep.js';
import { startJobs } from '../src/jobs/schedule.js';

/** Background jobs of every instance: they start once the service is ready and stop on close. */
export default fp(
  async (fastify) => {
    let stop: (() => Promise<void>) | undefined;
    fastify.addHook('onReady', async () => {
      stop = startJobs(
        [
          orphanSweepJob(fastify.db, fastify.storage),
          expirySweepJob(fastify.db, (keys) => fastify.dropBlobs(keys, fastify.log), fastify.config.sweepIntervalSeconds, {
            runs: fastify.metrics.sweeperRuns,
            filesRemoved: fastify.metrics.sweeperFilesRemoved,
          }),
          downloadFlushJob(fastify.downloadCounter),
        ],
        fastify.log,
      );
    });
    fastify.addHook('onClose', async () => {
      await stop?.();
    });
  },
  { name: 'jobs', fastify: '5.x', dependencies: ['db', 'storage', 'downloads', 'metrics'] },
);
