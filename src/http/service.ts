import type { FastifyInstance } from 'fastify';
import { refused, succeeded } from '../errors.js';
import { databaseReachable } from '../services/readiness.js';
import { hashSecret, sameSecret } from '../services/secret-hashing.js';
import { isStorageError } from '../storage/errors.js';
import { bearerToken } from './bearer.js';
import { sendApiError } from './envelope.js';
import { SERVICE_ENDPOINT } from './route-config.js';
import { envelopeSchema } from './schemas.js';

const tags = ['Service'];

/** The service's own endpoints: welcome, liveness, readiness and metrics. */
export default async function serviceRoutes(fastify: FastifyInstance): Promise<void> {
  const answer = (message: string) => ({ ...envelopeSchema, examples: [{ Code: 0, Message: message }] });
  fastify.get('/', { schema: { operationId: 'Welcome', summary: 'A welcome message.', tags, response: { 200: answer(succeeded.welcome) } } }, async () => ({
    Code: 0,
    Message: succeeded.welcome,
  }));

  // Liveness only: no database work, so a slow database never gets a healthy process restarted.
  fastify.get(
    '/health',
    { config: SERVICE_ENDPOINT, schema: { operationId: 'Health', summary: 'Liveness: 200 while the process is up.', tags, response: { 200: answer(succeeded.alive) } } },
    async () => ({ Code: 0, Message: succeeded.alive }),
  );

  const readiness = {
    operationId: 'Ready',
    summary: 'Readiness: 200 when the database answers, storage is writable and the service is not shutting down; else 503.',
    tags,
    response: { 200: answer(succeeded.ready), 503: { ...envelopeSchema, examples: [refused.notReady(['the database is unreachable']).envelope] } },
  };
  fastify.get('/ready', { config: SERVICE_ENDPOINT, schema: readiness }, async (_request, reply) => {
    const problems: string[] = [];
    if (fastify.lifecycle.shuttingDown) problems.push('the service is shutting down');
    if (!(await databaseReachable(fastify.db))) problems.push('the database is unreachable');
    // A full store still serves downloads: only a store that cannot be written at all is not ready.
    const storage = await fastify.storage.checkWritable().catch((error: unknown) => error);
    if (isStorageError(storage, 'unavailable')) problems.push('the storage is not writable');
    if (problems.length === 0) return { Code: 0, Message: succeeded.ready };
    return sendApiError(reply, refused.notReady(problems));
  });

  const { metricsToken } = fastify.config;
  const tokenHash = metricsToken === undefined ? undefined : hashSecret(metricsToken);
  const metrics = {
    operationId: 'Metrics',
    summary: 'Metrics of this instance in the Prometheus text format; with METRICS_TOKEN set, only for `Authorization: Bearer <METRICS_TOKEN>`.',
    tags,
    ...(tokenHash ? { security: [{ metricsToken: [] }] } : {}),
    response: {
      200: {
        description: 'Prometheus text format 0.0.4.',
        content: { 'text/plain': { schema: { type: 'string' }, example: '# TYPE filestore_uploads_in_flight gauge\nfilestore_uploads_in_flight 0\n' } },
      },
      ...(tokenHash ? { 401: envelopeSchema } : {}),
    },
  };
  fastify.get('/metrics', { config: SERVICE_ENDPOINT, schema: metrics }, async (request, reply) => {
    // Metrics reveal traffic and capacity: when a token is configured, nothing is shown without it.
    if (tokenHash && !sameSecret(bearerToken(request.headers) ?? '', tokenHash)) return sendApiError(reply, refused.metricsTokenRequired());
    reply.type(fastify.metrics.registry.contentType);
    return fastify.metrics.registry.metrics();
  });
}
