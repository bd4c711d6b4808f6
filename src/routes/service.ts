import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { sendEnvelope } from '../../plugins/envelope.js';
import { SERVICE_ENDPOINT } from '../../plugins/protection.js';

/** The service's own endpoints: welcome, liveness and readiness. */
export default async function serviceRoutes(fastify: FastifyInstance): Promise<void> {
  fastify.get('/', async () => ({
    Code: 0,
    Message: 'Welcome to the bucket file storage service. The API lives under /API/.',
  }));

  // Liveness only: no database work, so a slow database never gets a healthy process restarted.
  fastify.get('/health', { config: SERVICE_ENDPOINT }, async () => ({ Code: 0, Message: 'The process is up.' }));

  fastify.get('/ready', { config: SERVICE_ENDPOINT }, async (_request, reply) => {
    const problems: string[] = [];
    if (fastify.lifecycle.shuttingDown) problems.push('the service is shutting down');
    try {
      await sql`select 1`.execute(fastify.db);
    } catch {
      problems.push('the database is unreachable');
    }
    if (!(await fastify.storage.isWritable())) problems.push('the storage is not writable');
    if (problems.length === 0) return { Code: 0, Message: 'Ready.' };
    return sendEnvelope(reply, 503, { Code: -1, Message: `Not ready: ${problems.join('; ')}.` });
  });
}
