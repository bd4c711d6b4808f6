import fp from 'fastify-plugin';
import { serviceJobs } from '../src/jobs/index.js';
import { startJobs } from '../src/jobs/schedule.js';
import { takeOverLease } from '../src/services/leases.js';

/** Background jobs of every instance: they start once the service is ready and stop on close. */
export default fp(
  async (fastify) => {
    let stop: (() => Promise<void>) | undefined;
    fastify.addHook('onReady', async () => {
      const ctx = { db: fastify.db, storage: fastify.storage, resumable: fastify.resumable.resumable, log: fastify.log };
      const { instanceId, sweepIntervalSeconds } = fastify.config;
      // Before the first request: this instance's writes are its own from the start. With the
      // database or the store down, the service still starts (and answers 503); the heartbeat job
      // takes the lease once the database is back.
      await takeOverLease(fastify.db, fastify.storage, instanceId).catch((error: unknown) =>
        fastify.log.warn({ err: error }, 'the instance lease could not be taken at start; the heartbeat retries'),
      );
      stop = startJobs(serviceJobs(ctx, fastify.downloadCounter, fastify.metrics, { sweepIntervalSeconds, instanceId }, fastify.images), fastify.log);
    });
    fastify.addHook('onClose', async () => {
      await stop?.();
    });
  },
  { name: 'jobs', fastify: '5.x', dependencies: ['db', 'storage', 'resumable', 'download-counter', 'metrics', 'images'] },
);
