import cors from '@fastify/cors';
import fp from 'fastify-plugin';
import { corsOptions } from '../src/http/cors.js';

/**
 * CORS for the origins of CORS_ORIGINS (nothing when unset). Registered before the other hooks, so
 * refusals (429, 503…) carry the headers too and a browser app can read why it was refused.
 */
export default fp(
  async (fastify) => {
    const origins = fastify.config.corsOrigins;
    if (origins !== '*' && origins.length === 0) return;
    await fastify.register(cors, corsOptions(origins));
  },
  { name: 'cors', fastify: '5.x', dependencies: ['envelope'] },
);
