import formbody from '@fastify/formbody';
import fp from 'fastify-plugin';

/**
 * For the context of the contract's operations only (/API/… and /Secret/Generate): form bodies
 * are parsed, JSON and plain text are not part of the protocol, and the route schemas describe the
 * operations for /docs without being enforced. The binding (src/http/binding.ts) validates, with
 * the texts the original clients know, so Ajv must neither reject, coerce nor strip; and replies
 * are serialized as they are, since refusals share HTTP 200 with the success shape.
 */
export default fp(
  async (fastify) => {
    await fastify.register(formbody);
    fastify.removeContentTypeParser(['application/json', 'text/plain']);
    fastify.setValidatorCompiler(() => () => true);
    fastify.setSerializerCompiler(() => (data) => JSON.stringify(data));
  },
  { name: 'api-binding', fastify: '5.x', dependencies: ['envelope'] },
);
