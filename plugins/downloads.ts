import fastifyStatic from '@fastify/static';
import fp from 'fastify-plugin';
import { DownloadCounter } from '../src/services/download-counter.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Completed downloads of this instance not yet written to the database. */
    downloadCounter: DownloadCounter;
  }
}

/**
 * What serving downloads needs: `reply.sendFile` (ranges, ETag, conditional GET) without any route
 * of its own, since only paths read from the database are served, and the download counter.
 */
export default fp(
  async (fastify) => {
    await fastify.register(fastifyStatic, { serve: false });
    const counter = new DownloadCounter(fastify.db);
    fastify.decorate('downloadCounter', counter);
    fastify.metrics.counterFlushLagSource = () => counter.lagSeconds();
    // Runs after the server has stopped and its requests have finished: their counts are written.
    fastify.addHook('onClose', async () => {
      await counter.flush().catch((error: unknown) => fastify.log.error({ err: error }, 'download counts were not written at shutdown'));
    });
  },
  { name: 'downloads', fastify: '5.x', dependencies: ['db', 'metrics'] },
);
