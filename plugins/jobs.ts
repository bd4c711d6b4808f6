import fp from 'fastify-plugin';
import { serviceJobs } from '../src/jobs/index.js';
import { startJobs } from '../src/jobs/schedule.js';

/** Background jobs of every instance: they start once the service is ready and stop on close. */
export default fp(
  async (fastify) => {
    let stop: (() => Promise<void>) | undefined;
    fastify.addHook('onReady', async () => {
      const ctx = { db: fastify.db, storage: fastify.storage, log: fastify.log };
      stop = startJobs(serviceJobs(ctx, fastify.downloadCounter, fastify.metrics, fastify.config.sweepIntervalSeconds), fastify.log);
    });
    fastify.addHook('onClose', async () => {
      await stop?.();
    });
  },
  { name: 'jobs', fastify: '5.x', dependencies: ['db', 'storage', 'download-counter', 'metrics'] },
);
