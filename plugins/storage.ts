import fp from 'fastify-plugin';
import type { DiskStore } from '../src/storage/disk-store.js';

declare module 'fastify' {
  interface FastifyInstance {
    storage: DiskStore;
  }
}

/** Puts the blob store on Fastify; its folders are prepared before the server listens. */
export default fp<{ storage: DiskStore }>(
  async (fastify, { storage }) => {
    await storage.prepare();
    fastify.decorate('storage', storage);
  },
  { name: 'storage', fastify: '5.x' },
);
