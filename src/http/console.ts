import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/**
 * The console's policy: its own scripts and styles only (no inline script, no eval), API calls and
 * previews on this origin only, never framed.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "media-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Built files have a content hash in their name: cached for good. index.html is checked each time. */
const HASHED_ASSET = /[\\/]assets[\\/]/;

/**
 * Where `npm run build` puts the console: dist/console, whether this module runs compiled (from
 * dist/src/http) or from source (src/http, as in the tests).
 */
export function defaultConsoleDir(): string {
  const up = fileURLToPath(new URL('../../', import.meta.url));
  return path.basename(up) === 'dist' ? path.join(up, 'console') : path.join(up, 'dist', 'console');
}

/** GET /console: the web console, a static single-page client of the public API. */
export default async function consoleRoutes(fastify: FastifyInstance, options: { root: string }): Promise<void> {
  if (!existsSync(path.join(options.root, 'index.html'))) {
    fastify.log.warn({ root: options.root }, 'the web console is not built (npm run build): /console is not served');
    return;
  }
  await fastify.register(fastifyStatic, {
    root: options.root,
    prefix: '/console/',
    wildcard: true,
    cacheControl: false,
    setHeaders: (reply, filePath) => {
      reply.header('Content-Security-Policy', CONSOLE_CSP);
      reply.header('Cache-Control', HASHED_ASSET.test(filePath) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  fastify.get('/console', { schema: { operationId: 'Console', summary: 'The web console.', tags: ['Service'] } }, (_request, reply) => reply.sendFile('index.html'));
}
