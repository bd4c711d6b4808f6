import fp from 'fastify-plugin';
import { failure } from '../src/errors.js';
import { appIdForToken } from '../src/services/tokens.js';

export const INVALID_TOKEN_MESSAGE = 'Invalid or expired AccessToken.';

declare module 'fastify' {
  interface FastifyInstance {
    /** The AppId a live AccessToken belongs to; a bad, expired or revoked token is refused with -1. */
    appForToken(accessToken: string): Promise<string>;
  }
}

export default fp(
  async (fastify) => {
    fastify.decorate('appForToken', async (accessToken: string) => {
      const appId = await appIdForToken(fastify.db, accessToken);
      if (appId === undefined) throw failure(INVALID_TOKEN_MESSAGE);
      return appId;
    });
  },
  { name: 'auth', fastify: '5.x', dependencies: ['db'] },
);
