import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { sendEnvelope } from '../../plugins/envelope.js';
import { SERVICE_ENDPOINT } from '../../plugins/protection.js';
import { envelopeSchema } from './schemas.js';

const tags = ['Service'];

/** The service's own endpoints: welcome, liveness, readiness and metrics. */
export default async function serviceRoutes(fastify: FastifyInstance): Promise<void> {
  fastify.get('/', { schema: { summary: 'A welcome message.', tags, response: { 200: envelopeSchema } } }, async () => ({
    Code: 0,
    Message: 'Welcome to the bucket file storage service. The API lives under /API/.',
  }));

  // Liveness only: no database work, so a slow database never gets a healthy process restarted.
  fastify.get(
    '/health',
    { config: SERVICE_ENDPOINT, schema: { summary: 'Liveness: 200 while the process is up.', tags, response: { 200: envelopeSchema } } },
    async () => ({ Code: 0, Message: 'The process is up.' }),
  );

  const readiness = {
    summary: 'Readiness: 200 when the database answers, storage is writable and the service is not shutting down; else 503.',
    tags,
    response: { 200: envelopeSchema, 503: envelopeSchema },
  };
  fastify.get('/ready', { config: SERVICE_ENDPOINT, schema: readiness }, async (_request, reply) => {
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

  const metrics = {
    summary: 'Metrics of this instance in the Prometheus text format.',
    tags,
    response: { 200: { description: 'Prometheus text format 0.0.4.', content: { 'text/plain': { schema: { type: 'string' } } } } },
  };
  fastify.get('/metrics', { config: SERVICE_ENDPOINT, schema: metrics }, async (_request, reply) => {
    reply.type(fastify.metrics.registry.contentType);
    return fastify.metrics.registry.metrics();
  });
}
