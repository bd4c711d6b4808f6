import fp from 'fastify-plugin';
import { handleError, handleNotFound } from '../src/http/envelope.js';

/** Every error and every unknown path is answered with the JSON envelope. */
export default fp(
  async (fastify) => {
    fastify.setErrorHandler(handleError);
    fastify.setNotFoundHandler(handleNotFound);
  },
  { name: 'envelope', fastify: '5.x' },
);
