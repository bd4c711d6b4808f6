import fp from 'fastify-plugin';
import { Admission } from '../src/services/admission.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Per-app turns at heavy work; routes take one with admitHeavy (src/http/admission.ts). */
    admission: Admission;
  }
}

/** The instance's per-app admission of heavy work, its outcomes counted in /metrics. */
export default fp(
  async (fastify) => {
    const { perAppConcurrency, perAppQueue, perAppQueueTimeoutSeconds } = fastify.config;
    const outcomes = fastify.metrics.admissions;
    fastify.decorate(
      'admission',
      new Admission({ concurrency: perAppConcurrency, queue: perAppQueue, queueTimeoutMs: perAppQueueTimeoutSeconds * 1000 }, (outcome) =>
        outcomes.inc({ outcome }),
      ),
    );
  },
  { name: 'admission', fastify: '5.x', dependencies: ['metrics'] },
);
