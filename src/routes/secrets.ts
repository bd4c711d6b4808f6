import type { FastifyInstance } from 'fastify';
import { accessTokenParam } from '../../plugins/auth.js';
import { bindParameters, field, MAX_ID, type Source } from '../../plugins/validation.js';
import { generateDownloadSecret, peekDownloadSecret, useDownloadSecret } from '../services/download-secrets.js';
import { docsSchema, downloadRouteOptions, fileNotFound, queryValue, serveFile, setSafetyHeaders } from './serve-file.js';

const generateParams = {
  AccessToken: accessTokenParam(),
  Id: field.integer({ minimum: 1, maximum: MAX_ID, description: 'FileKey of a live file in one of the app’s buckets.' }),
  MaxUseTimes: field.optionalInteger({ minimum: 1, maximum: 1_000_000, default: 1, description: 'How many downloads the secret allows.' }),
};

/** The secret is the credential: no shared cache may keep what it unlocked. */
const PRIVATE_CACHING = 'private, no-store';

/** Download secrets: a way to hand out a file of a bucket that is not OpenToRead. */
export default async function secretRoutes(fastify: FastifyInstance): Promise<void> {
  fastify.get(
    '/Secret/Generate',
    { schema: docsSchema('Create a secret that downloads one of the app’s files MaxUseTimes times.') },
    async (request) => {
      const { AccessToken, Id, MaxUseTimes } = bindParameters(generateParams, request.query as Source);
      const appId = await fastify.appForToken(AccessToken);
      const value = await generateDownloadSecret(fastify.db, appId, Id, MaxUseTimes);
      return { Value: value, Code: 0, Message: 'Successfully generated a download secret.' };
    },
  );

  // Every GET that the secret lets through takes one use, whatever range it asks for (else a
  // one-use secret would serve a whole file in many ranges); HEAD only looks.
  fastify.get(
    '/Download/FromSecret',
    downloadRouteOptions('Download a file with a download secret while it has uses left.'),
    async (request, reply) => {
      setSafetyHeaders(reply);
      const secret = queryValue(request.query, 'sec');
      if (!secret) throw fileNotFound();
      const file = request.method === 'HEAD' ? await peekDownloadSecret(fastify.db, secret) : await useDownloadSecret(fastify.db, secret);
      if (!file) throw fileNotFound();
      return serveFile(request, reply, file, PRIVATE_CACHING);
    },
  );
}
