import type { FastifyInstance } from 'fastify';
import { refused, succeeded } from '../errors.js';
import { createApp } from '../services/apps.js';
import { hashSecret, sameSecret } from '../services/secret-hashing.js';
import { bearerToken } from './bearer.js';
import { envelopeSchema } from './schemas.js';

/** Operator routes; registered only when ADMIN_KEY is set. */
export default async function adminRoutes(fastify: FastifyInstance, options: { adminKey: string }): Promise<void> {
  const keyHash = hashSecret(options.adminKey);

  fastify.addHook('onRequest', async (request) => {
    if (!sameSecret(bearerToken(request.headers) ?? '', keyHash)) throw refused.adminKeyRequired();
  });

  fastify.post(
    '/Admin/CreateApp',
    {
      // An operator's tool, not a browser app's: no cross-origin access.
      config: { rateLimit: { max: fastify.config.tokenRateLimitPerMinute, timeWindow: 60_000 }, cors: false },
      schema: {
        operationId: 'CreateApp',
        summary: 'Create an app; its AppSecret is shown only in this answer.',
        tags: ['Admin'],
        security: [{ adminKey: [] }],
        response: {
          200: {
            type: 'object',
            properties: { AppId: { type: 'string' }, AppSecret: { type: 'string' }, Code: { type: 'integer' }, Message: { type: 'string' } },
            required: ['AppId', 'AppSecret', 'Code', 'Message'],
            examples: [{ AppId: '5HpwAAfavKDm9rebRYJvMg', AppSecret: 'Vt3kqP0xWl9mZcR2bE8sYh4nJd6uFa1o', Code: 0, Message: succeeded.appCreated }],
          },
          401: envelopeSchema,
        },
      },
    },
    async () => {
      const app = await createApp(fastify.db);
      return { AppId: app.appId, AppSecret: app.appSecret, Code: 0, Message: succeeded.appCreated };
    },
  );
}
