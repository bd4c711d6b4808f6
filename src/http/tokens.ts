import type { FastifyInstance } from 'fastify';
import { APP_ID_PATTERN } from '../config.js';
import { refused, succeeded } from '../errors.js';
import { verifyAppSecret } from '../services/apps.js';
import { issueToken } from '../services/tokens.js';
import { field } from './binding.js';
import { exampleAppId } from './examples.js';
import { defineOperation } from './operation.js';

/** GET or POST /API/AccessToken: AppId and AppSecret → a short-lived AccessToken. */
export default async function tokenRoutes(fastify: FastifyInstance): Promise<void> {
  // One allowance for GET, POST and HEAD together: a route-level limit would give each its own.
  // The groupId names its counters in Redis when the limits are shared by all instances.
  const limit = fastify.rateLimit({ max: fastify.config.tokenRateLimitPerMinute, timeWindow: 60_000, groupId: 'AccessToken' });
  defineOperation(fastify, {
    name: 'AccessToken',
    method: ['GET', 'POST'],
    summary: 'Exchange an AppId and AppSecret for an AccessToken.',
    tag: 'Apps and tokens',
    response: {
      AccessToken: { type: 'string', description: 'Send it as the AccessToken parameter.' },
      DeadTime: { type: 'string', format: 'date-time', description: 'When the token stops working.' },
    },
    params: {
      AppId: field.text({ maxLength: 64, description: 'The app to act as.' }),
      AppSecret: field.text({ maxLength: 512, description: 'The secret given when the app was created.' }),
    },
    example: {
      request: { AppId: exampleAppId, AppSecret: 'Vt3kqP0xWl9mZcR2bE8sYh4nJd6uFa1o' },
      response: { AccessToken: 'mB2x9QeLr7VtK0sZ4pHw1nYc8uJd3fGa', DeadTime: '2026-11-20T10:24:05.123Z', Message: succeeded.accessToken },
    },
    config: { rateLimit: false },
    onRequest: limit,
    handler: async ({ AppId, AppSecret }) => {
      // One answer for an unknown app and a wrong secret: the reply must not reveal which.
      const valid = APP_ID_PATTERN.test(AppId) && (await verifyAppSecret(fastify.db, AppId, AppSecret));
      if (!valid) throw refused.wrongAppSecret();
      const token = await issueToken(fastify.db, AppId, fastify.config.tokenLifetimeSeconds);
      return { AccessToken: token.accessToken, DeadTime: token.deadTime.toISOString(), Message: succeeded.accessToken };
    },
  });
}
