import fp from 'fastify-plugin';
import { DownloadCounter } from '../src/services/download-counter.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Completed downloads of this instance not yet written to the database. */
    downloadCounter: DownloadCounter;
  }
}

/** The download counter; its last counts are written when the instance closes. */
export default fp(
  async (fastify) => {
    const counter = new DownloadCounter(fastify.db);
    fastify.decorate('downloadCounter', counter);
    // Runs after the server has stopped and its requests have finished: their counts are written.
    fastify.addHook('onClose', async () => {
      await counter.flush().catch((error: unknown) => fastify.log.error({ err: error }, 'download counts were not written at shutdown'));
    });
  },
  { name: 'download-counter', fastify: '5.x', dependencies: ['db'] },
);
