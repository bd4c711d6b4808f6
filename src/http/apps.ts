import type { FastifyInstance } from 'fastify';
import { succeeded } from '../errors.js';
import { deleteApp } from '../services/apps.js';
import { appForToken } from '../services/tokens.js';
import { admitHeavy } from './admission.js';
import { field, param } from './binding.js';
import { contextOf } from './context.js';
import { exampleAppId } from './examples.js';
import { defineOperation } from './operation.js';

/** POST /API/DeleteApp: an app deletes itself with everything it owns. */
export default async function appRoutes(fastify: FastifyInstance): Promise<void> {
  defineOperation(fastify, {
    name: 'DeleteApp',
    method: 'POST',
    summary: 'Delete the token’s app with its buckets, files, tokens and download secrets.',
    tag: 'Apps and tokens',
    params: {
      AccessToken: param.accessToken(),
      AppId: field.text({ maxLength: 64, description: 'The app to delete: the token’s own.' }),
    },
    example: { request: { AppId: exampleAppId }, response: { Message: succeeded.appDeleted } },
    handler: async ({ AccessToken, AppId }, request, reply) => {
      const tokenAppId = await appForToken(fastify.db, AccessToken);
      await admitHeavy(request, reply, tokenAppId);
      await deleteApp(contextOf(request), tokenAppId, AppId);
      return { Message: succeeded.appDeleted };
    },
  });
}
