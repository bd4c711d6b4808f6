import type { FastifyInstance } from 'fastify';
import { accessTokenParam } from '../../plugins/auth.js';
import { defineOperation, field } from '../../plugins/validation.js';
import { deleteApp } from '../services/apps.js';

/** POST /API/DeleteApp: an app deletes itself with everything it owns. */
export default async function appRoutes(fastify: FastifyInstance): Promise<void> {
  defineOperation(fastify, {
    name: 'DeleteApp',
    method: 'POST',
    summary: 'Delete the token’s app with its buckets, files, tokens and download secrets.',
    tag: 'Apps and tokens',
    params: {
      AccessToken: accessTokenParam(),
      AppId: field.text({ maxLength: 64, description: 'The app to delete: the token’s own.' }),
    },
    handler: async ({ AccessToken, AppId }, request) => {
      const tokenAppId = await fastify.appForToken(AccessToken);
      await deleteApp(fastify.db, tokenAppId, AppId, (keys) => fastify.dropBlobs(keys, request.log));
      return { Message: 'Successfully deleted that app and all files.' };
    },
  });
}
