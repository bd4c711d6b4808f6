import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';

const DESCRIPTION = `Applications keep their files in buckets.

Every /API operation answers a JSON object with \`Code\` (0 success, -1 failure, -10 invalid input)
and \`Message\`; refusals come with HTTP 200, transport-level failures with their own status.
Paths and parameter names are matched case-insensitively, and each GET operation also answers under
its name with \`Try\` appended. POST operations read form fields merged with the query string (the
body wins). Booleans are \`true\`/\`false\` in any case; numbers are decimal integers.`;

/** The OpenAPI document of GET /docs/json, built from every route's schema. */
export const OPENAPI: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: '3.0.3',
    info: { title: 'Bucket file storage', version: '1', description: DESCRIPTION },
    tags: [
      { name: 'Apps and tokens' },
      { name: 'Buckets' },
      { name: 'Files' },
      { name: 'Downloads', description: 'File bytes at their InternetPath, by FileKey, or through a download secret.' },
      { name: 'Service', description: 'Probes and metrics.' },
      { name: 'Admin', description: 'Present only when ADMIN_KEY is set.' },
    ],
    components: {
      securitySchemes: {
        adminKey: { type: 'http', scheme: 'bearer', description: 'The ADMIN_KEY.' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'The METRICS_TOKEN.' },
      },
    },
  },
};

/** GET /docs: the browsable description. */
export const DOCS_UI: FastifySwaggerUiOptions = {
  routePrefix: '/docs',
  // The UI's own policy (its scripts and styles by hash) replaces the strict one of the JSON
  // answers; without upgrade-insecure-requests, which breaks it wherever it is served over HTTP.
  staticCSP: true,
  transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;/, ''),
};
