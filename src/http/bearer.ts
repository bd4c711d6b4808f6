import type { IncomingHttpHeaders } from 'node:http';

/**
 * The token of an `Authorization: Bearer <token>` header (RFC 6750), which keeps tokens out of the
 * URLs that proxies log; undefined when there is no such header (another scheme is not a token).
 */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const token = /^Bearer[ \t]+(.*)$/i.exec(headers.authorization ?? '')?.[1]?.trim();
  return token ? token : undefined;
}
