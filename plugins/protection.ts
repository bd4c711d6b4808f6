import fp from 'fastify-plugin';
import { sendEnvelope } from './envelope.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** /health, /ready and /metrics: orchestrators and scrapers must reach them whatever the state. */
    serviceEndpoint?: boolean;
  }
}

/** Route config of the service endpoints. */
export const SERVICE_ENDPOINT = { serviceEndpoint: true } as const;

/**
 * Requests the service turns away before any handler runs. During shutdown: everything but the
 * service endpoints gets 503 with the envelope (Fastify's own 503 body is not the envelope), and
 * `Connection: close` so the client's next attempt opens a connection to another instance.
 */
export default fp(
  async (fastify) => {
    fastify.addHook('onRequest', (request, reply, done) => {
      if (!fastify.lifecycle.shuttingDown || request.routeOptions.config.serviceEndpoint) return done();
      reply.header('Connection', 'close');
      sendEnvelope(reply, 503, { Code: -1, Message: 'The service is shutting down; send the request again.' });
    });
  },
  { name: 'protection', fastify: '5.x', dependencies: ['envelope'] },
);
