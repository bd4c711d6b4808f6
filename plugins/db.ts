import fp from 'fastify-plugin';
import type { Kysely } from 'kysely';
import type { DatabaseHandle } from '../db/connect.js';
import type { Database } from '../db/schema.js';

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>;
  }
}

/**
 * Puts the Kysely instance on Fastify. The handle is opened and closed by its owner (the server
 * entry or a test), because several Fastify instances may share one database.
 */
export default fp<{ database: DatabaseHandle }>(
  async (fastify, { database }) => {
    fastify.decorate('db', database.db);
  },
  { name: 'db', fastify: '5.x' },
);
