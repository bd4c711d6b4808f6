import fp from 'fastify-plugin';
import { answerBeforeBody, bodyIsIn, continueParsedBodies, deferContinue } from '../src/http/unread-bodies.js';

/** Answers sent before a request's body was read reach their client (see src/http/unread-bodies.ts). */
export default fp(
  async (fastify) => {
    deferContinue(fastify.server);
    fastify.addHook('preParsing', continueParsedBodies);
    fastify.addHook('onSend', (request, reply, payload, done) => {
      // Almost every answer comes after its whole request: no promise for those.
      if (bodyIsIn(request.raw)) return done(null, payload);
      answerBeforeBody(request, reply, payload).then((sent) => done(null, sent), done);
    });
  },
  { name: 'unread-bodies', fastify: '5.x' },
);
