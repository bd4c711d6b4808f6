import formbody from '@fastify/formbody';
import fp from 'fastify-plugin';
import { parseJsonFields } from '../src/http/json-body.js';

/**
 * For the context of the contract's operations only (/API/… and /Secret/Generate): form bodies
 * and JSON objects of the same fields are parsed (plain text is not part of the protocol), and the
 * route schemas describe the operations for /docs without being enforced. The binding
 * (src/http/binding.ts) validates, with the texts the original clients know, so Ajv must neither
 * reject, coerce nor strip; and replies are serialized as they are, since refusals share HTTP 200
 * with the success shape.
 */
export default fp(
  async (fastify) => {
    await fastify.register(formbody);
    fastify.removeContentTypeParser(['application/json', 'text/plain']);
    fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      try {
        done(null, parseJsonFields(body as string));
      } catch (error) {
        done(error as Error, undefined);
      }
    });
    fastify.setValidatorCompiler(() => () => true);
    fastify.setSerializerCompiler(() => (data) => JSON.stringify(data));
  },
  { name: 'api-binding', fastify: '5.x', dependencies: ['envelope'] },
);
