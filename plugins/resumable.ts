import fp from 'fastify-plugin';
import { resumableExpirySweepJob } from '../src/jobs/resumable-expiry-sweep.js';
import { startJobs } from '../src/jobs/schedule.js';
import type { ResumableContext } from '../src/services/resumable-uploads.js';
import type { ResumableBytes } from '../src/storage/resumable-bytes.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** What resumable uploads work with: the database, both stores, the expiry. */
    resumable: ResumableContext;
  }
}

/** The store of incomplete resumable uploads, prepared before listening, and the sweep of expired ones. */
export default fp<{ bytes: ResumableBytes }>(
  async (fastify, { bytes }) => {
    await bytes.prepare();
    const ctx: ResumableContext = {
      db: fastify.db,
      storage: fastify.storage,
      log: fastify.log,
      resumable: bytes,
      expiryMs: fastify.config.resumableUploadExpirySeconds * 1000,
    };
    fastify.decorate('resumable', ctx);
    let stop: (() => Promise<void>) | undefined;
    fastify.addHook('onReady', async () => {
      stop = startJobs([resumableExpirySweepJob(ctx, fastify.config.sweepIntervalSeconds)], fastify.log);
    });
    fastify.addHook('onClose', async () => {
      await stop?.();
    });
  },
  { name: 'resumable', fastify: '5.x', dependencies: ['db', 'storage'] },
);
