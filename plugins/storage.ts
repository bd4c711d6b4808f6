import fp from 'fastify-plugin';
import type { BlobStore } from '../src/storage/blob-store.js';

declare module 'fastify' {
  interface FastifyInstance {
    storage: BlobStore;
  }
}

/** Puts the blob store on Fastify; it is prepared (folders, bucket) before the server listens. */
export default fp<{ storage: BlobStore }>(
  async (fastify, { storage }) => {
    await storage.prepare();
    fastify.decorate('storage', storage);
  },
  { name: 'storage', fastify: '5.x' },
);
