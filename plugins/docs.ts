import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import { DOCS_UI, OPENAPI } from '../src/http/openapi.js';

/** GET /docs, the browsable OpenAPI description, and /docs/json; every route registered after it is listed. */
export default fp(
  async (fastify) => {
    await fastify.register(swagger, OPENAPI);
    await fastify.register(swaggerUi, DOCS_UI);
  },
  { name: 'docs', fastify: '5.x' },
);
