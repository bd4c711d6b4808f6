import fp from 'fastify-plugin';
import { failure, INVALID_TOKEN_MESSAGE } from '../src/errors.js';
import { appIdForToken } from '../src/services/tokens.js';
import { field } from './validation.js';

/** The AccessToken parameter every authenticated operation takes. */
export const accessTokenParam = () => field.text({ maxLength: 128, description: 'A token from /API/AccessToken.' });

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
