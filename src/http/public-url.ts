import type { FastifyRequest } from 'fastify';

const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/**
 * The origin InternetPaths start with: PUBLIC_URL when set, else the request's own origin (its
 * X-Forwarded-Proto/Host only when TRUST_PROXY is set, which Fastify's trustProxy handles).
 */
export function publicBaseUrl(request: FastifyRequest): string {
  const configured = request.server.config.publicUrl;
  if (configured) return configured;
  const host = HOST.test(request.host) ? request.host : 'localhost';
  return `${request.protocol}://${host}`;
}
