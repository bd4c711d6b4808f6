import fp from 'fastify-plugin';
import { Admission, type AdmittedWork } from '../src/services/admission.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Per-app turns at heavy work, one set for each kind: uploads last minutes and have turns of
     * their own, so an app's running uploads never hold up its listings. Routes take one with
     * admitHeavy (src/http/admission.ts).
     */
    admission: Record<AdmittedWork, Admission>;
  }
}

/** The instance's per-app admission of heavy work, its outcomes counted in /metrics. */
export default fp(
  async (fastify) => {
    const { perAppConcurrency, perAppUploads, perAppQueue, perAppQueueTimeoutSeconds } = fastify.config;
    const outcomes = fastify.metrics.admissions;
    const admission = (work: AdmittedWork, concurrency: number) =>
      new Admission({ concurrency, queue: perAppQueue, queueTimeoutMs: perAppQueueTimeoutSeconds * 1000 }, (outcome) => outcomes.inc({ work, outcome }));
    fastify.decorate('admission', { requests: admission('requests', perAppConcurrency), uploads: admission('uploads', perAppUploads) });
  },
  { name: 'admission', fastify: '5.x', dependencies: ['metrics'] },
);
