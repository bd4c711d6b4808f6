import type { FastifyBaseLogger } from 'fastify';
import fp from 'fastify-plugin';
import type { DiskStore } from '../src/storage/disk-store.js';

declare module 'fastify' {
  interface FastifyInstance {
    storage: DiskStore;
    /**
     * Removes bytes whose rows are already committed away. The operation has succeeded by then, so
     * a failure here is logged, not thrown: the bytes are unreferenced and the orphan sweep takes them.
     */
    dropBlobs(storageKeys: string[], log: FastifyBaseLogger): Promise<void>;
  }
}

/** Puts the blob store on Fastify; its folders are prepared before the server listens. */
export default fp<{ storage: DiskStore }>(
  async (fastify, { storage }) => {
    await storage.prepare();
    fastify.decorate('storage', storage);
    fastify.decorate('dropBlobs', async (storageKeys: string[], log: FastifyBaseLogger) => {
      await storage.remove(storageKeys).catch((error: unknown) => log.error({ err: error }, 'stored bytes were not removed'));
    });
  },
  { name: 'storage', fastify: '5.x' },
);
