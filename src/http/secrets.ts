import type { FastifyInstance } from 'fastify';
import { ApiError, refused, succeeded } from '../errors.js';
import { generateDownloadSecret, peekDownloadSecret, returnDownloadSecretUse, useDownloadSecret } from '../services/download-secrets.js';
import { appForToken } from '../services/tokens.js';
import { bindRequest, field, param, type Source } from './binding.js';
import { downloadSchema } from './download-docs.js';
import { downloadRoute, queryValue, sendDownload, setSafetyHeaders } from './download-reply.js';
import { envelopeResponses, parametersSchema, tokenSecurity } from './operation.js';
import { imageOptionsOf } from './image-request.js';

const generateParams = {
  AccessToken: param.accessToken(),
  Id: param.fileKey('FileKey of a live file in one of the app’s buckets.'),
  MaxUseTimes: field.optionalInteger({ minimum: 1, maximum: 1_000_000, default: 1, description: 'How many downloads the secret allows.' }),
};

/** The secret is the credential: no shared cache may keep what it unlocked. */
const PRIVATE_CACHING = 'private, no-store';

/** GET /Secret/Generate: a way to hand out a file of a bucket that is not OpenToRead. */
export async function secretGenerationRoutes(fastify: FastifyInstance): Promise<void> {
  const schema = {
    operationId: 'GenerateSecret',
    summary: 'Create a secret that downloads one of the app’s files MaxUseTimes times.',
    description: 'The secret is spent at /Download/FromSecret?sec=<Value>; each GET it serves uses one.',
    tags: ['Downloads'],
    ...tokenSecurity(generateParams),
    querystring: parametersSchema(generateParams, {}, { Id: 7, MaxUseTimes: 3 }),
    response: envelopeResponses({ Value: { type: 'string', description: 'The secret.' } }, { Value: 'hV3q0mZ8rT2bLx5kPw9sYc1nQe7uJd4a', Message: succeeded.secretGenerated }),
  };
  fastify.get('/Secret/Generate', { schema }, async (request) => {
    const { AccessToken, Id, MaxUseTimes } = bindRequest(generateParams, request.headers, request.query as Source);
    const appId = await appForToken(fastify.db, AccessToken);
    const value = await generateDownloadSecret(fastify.db, appId, Id, MaxUseTimes);
    return { Value: value, Code: 0, Message: succeeded.secretGenerated };
  });
}

/** GET /Download/FromSecret: the file of a download secret while it has uses left. */
export async function secretDownloadRoutes(fastify: FastifyInstance): Promise<void> {
  // Every GET that the secret lets through takes one use, whatever range it asks for (else a
  // one-use secret would serve a whole file in many ranges); HEAD only looks.
  fastify.route({
    url: '/Download/FromSecret',
    ...downloadRoute(
      downloadSchema('DownloadFromSecret', 'Download a file with a download secret while it has uses left; each GET uses one, HEAD none.', {
        query: { sec: { type: 'string', description: 'The Value of /Secret/Generate.', examples: ['hV3q0mZ8rT2bLx5kPw9sYc1nQe7uJd4a'] } },
        required: ['sec'],
      }),
    ),
    handler: async (request, reply) => {
      setSafetyHeaders(reply);
      // Before the secret is looked at: a bad option takes none of its uses.
      const image = imageOptionsOf(request);
      const secret = queryValue(request.query, 'sec');
      if (!secret) throw refused.downloadNotFound();
      if (request.method === 'HEAD') {
        const file = await peekDownloadSecret(fastify.db, secret);
        if (!file) throw refused.downloadNotFound();
        return sendDownload(request, reply, file, PRIVATE_CACHING, image);
      }
      const file = await useDownloadSecret(fastify.db, secret);
      if (!file) throw refused.downloadNotFound();
      return sendDownload(request, reply, file, PRIVATE_CACHING, image).catch(async (error: unknown) => {
        // Refused for want of capacity: the use goes back, as if the request had not been made.
        if (error instanceof ApiError && (error.kind === 'unavailable' || error.kind === 'rate-limited')) await returnDownloadSecretUse(fastify.db, secret);
        throw error;
      });
    },
  });
}
