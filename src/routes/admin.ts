import type { FastifyInstance } from 'fastify';
import { failure } from '../errors.js';
import { createApp } from '../services/apps.js';
import { hashSecret, sameSecret } from '../services/secrets.js';

/** Operator routes; registered only when ADMIN_KEY is set. */
export default async function adminRoutes(fastify: FastifyInstance, options: { adminKey: string }): Promise<void> {
  const keyHash = hashSecret(options.adminKey);

  fastify.addHook('onRequest', async (request, reply) => {
    const header = request.headers.authorization ?? '';
    const presented = /^Bearer (.+)$/i.exec(header)?.[1]?.trim() ?? '';
    if (!sameSecret(presented, keyHash)) {
      reply.header('WWW-Authenticate', 'Bearer');
      throw failure('A valid admin key is required.', 401);
    }
  });

  fastify.post(
    '/Admin/CreateApp',
    { config: { rateLimit: { max: fastify.config.tokenRateLimitPerMinute, timeWindow: 60_000 } } },
    async () => {
      const app = await createApp(fastify.db);
      return { AppId: app.appId, AppSecret: app.appSecret, Code: 0, Message: 'Successfully created the app.' };
    },
  );
}
