import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import { ACCESS_TOKEN_SCHEME, TRY_ALIASES_TAG } from './operation.js';
import { resumablePaths } from './resumable-docs.js';

const DESCRIPTION = `Applications keep their files in buckets.

Every /API operation answers a JSON object with \`Code\` (0 success, -1 failure, -10 invalid input)
and \`Message\`; refusals come with HTTP 200, transport-level failures with their own status.
Paths and parameter names are matched case-insensitively, and each GET operation also answers under
its name with \`Try\` appended (listed last, deprecated). POST operations read a JSON object or form
fields, merged with the query string (the body wins). Booleans are \`true\`/\`false\` in any case;
numbers are decimal integers.

To try the operations here: get a token with POST /API/AccessToken, then give it to **Authorize**.`;

type OpenApiDocument = { paths?: Record<string, Record<string, Record<string, unknown>>> };

/**
 * The document as built from the routes, completed where a route schema cannot say it: each tus
 * request described on its own, and an operationId of its own for the HEAD of a GET-and-HEAD route.
 */
function complete(document: OpenApiDocument): OpenApiDocument {
  const paths = { ...document.paths, ...resumablePaths };
  for (const operations of Object.values(paths)) {
    const head = operations.head;
    if (head && operations.get && head.operationId === operations.get.operationId) {
      operations.head = { ...head, operationId: `${String(head.operationId)}Head`, summary: `${String(head.summary)} Headers only: uses no download, nor a use of a secret.` };
    }
  }
  return { ...document, paths };
}

/** The OpenAPI document of GET /docs/json, built from every route's schema. */
export const OPENAPI: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: '3.0.3',
    info: { title: 'Bucket file storage', version: '1', description: DESCRIPTION },
    tags: [
      { name: 'Apps and tokens' },
      { name: 'Buckets' },
      { name: 'Files' },
      { name: 'Resumable uploads', description: 'tus 1.0.0: any tus client works.' },
      { name: 'Downloads', description: 'File bytes at their InternetPath, by FileKey, or through a download secret.' },
      { name: 'Service', description: 'Probes and metrics.' },
      { name: 'Admin', description: 'Present only when ADMIN_KEY is set.' },
      { name: TRY_ALIASES_TAG, description: 'Each GET operation under its name with Try appended, as the specification lists them: the same operations, deprecated.' },
    ],
    components: {
      securitySchemes: {
        [ACCESS_TOKEN_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          description: 'An AccessToken from /API/AccessToken, as `Authorization: Bearer <token>`; the AccessToken parameter is the other way to send it.',
        },
        adminKey: { type: 'http', scheme: 'bearer', description: 'The ADMIN_KEY.' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'The METRICS_TOKEN.' },
      },
    },
  },
  transformObject: (documentObject) => complete((documentObject as { openapiObject: OpenApiDocument }).openapiObject) as never,
};

/**
 * A Swagger UI plugin, run in the browser: the aliases' group starts folded, so the list shows each
 * operation once. (The UI's own plugin that loads the document is kept.)
 */
function foldAliases(): Record<string, unknown> {
  return {
    afterLoad: (system: { layoutActions: { show: (key: string[], shown: boolean) => void } }) => {
      system.layoutActions.show(['operations-tag', 'Try aliases'], false);
    },
  };
}
declare const SwaggerUIBundle: { plugins: { DownloadUrl: (system: unknown) => unknown } };
function downloadUrl(system: unknown): unknown {
  return SwaggerUIBundle.plugins.DownloadUrl(system);
}

/** GET /docs: the browsable description. */
export const DOCS_UI: FastifySwaggerUiOptions = {
  routePrefix: '/docs',
  // The token given to Authorize stays across reloads of the page (in its localStorage).
  uiConfig: { persistAuthorization: true, plugins: [downloadUrl, foldAliases] as never },
  // The UI's own policy (its scripts and styles by hash) replaces the strict one of the JSON
  // answers; without upgrade-insecure-requests, which breaks it wherever it is served over HTTP;
  // with inline styles, which its highlighting of the answers of "Try it out" sets.
  staticCSP: true,
  transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;/, '').replace(/style-src 'self'/, "style-src 'self' 'unsafe-inline'"),
};
