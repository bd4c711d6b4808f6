import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';

const DESCRIPTION = `Applications keep their files in buckets.

Every /API operation answers a JSON object with \`Code\` (0 success, -1 failure, -10 invalid input)
and \`Message\`; refusals come with HTTP 200, transport-level failures with their own status.
Paths and parameter names are matched case-insensitively, and each GET operation also answers under
its name with \`Try\` appended. POST operations read form fields merged with the query string (the
body wins). Booleans are \`true\`/\`false\` in any case; numbers are decimal integers.`;

/**
 * GET /docs: the browsable OpenAPI description, and /docs/json. Built from the routes' schemas,
 * which defineOperation derives from each operation's parameter spec; every route is listed.
 */
export default fp(
  async (fastify) => {
    await fastify.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: { title: 'Bucket file storage', version: '1', description: DESCRIPTION },
        tags: [
          { name: 'Apps and tokens' },
          { name: 'Buckets' },
          { name: 'Files' },
          { name: 'Service', description: 'Probes and metrics.' },
          { name: 'Admin', description: 'Present only when ADMIN_KEY is set.' },
        ],
        components: { securitySchemes: { adminKey: { type: 'http', scheme: 'bearer', description: 'The ADMIN_KEY.' } } },
      },
    });
    await fastify.register(swaggerUi, {
      routePrefix: '/docs',
      // The UI's own policy (its scripts and styles by hash) replaces the strict one of the JSON
      // answers; without upgrade-insecure-requests, which breaks it wherever it is served over HTTP.
      staticCSP: true,
      transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;/, ''),
    });
  },
  { name: 'docs', fastify: '5.x' },
);
