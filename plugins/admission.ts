import fp from 'fastify-plugin';
import { refused } from '../src/errors.js';
import { Admission, type AdmissionLimits, type AdmittedWork } from '../src/services/admission.js';
import { RETRY_AFTER_SECONDS as IMAGES_RETRY_AFTER_SECONDS } from '../src/services/render-slots.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Per-app turns at heavy work, one set for each kind: uploads last minutes and have turns of
     * their own, so an app's running uploads never hold up its listings; image renders have theirs.
     * Routes take one with admitHeavy (src/http/admission.ts).
     */
    admission: Record<AdmittedWork, Admission>;
  }
}

/** The instance's per-app admission of heavy work, its outcomes counted in /metrics. */
export default fp(
  async (fastify) => {
    const { perAppConcurrency, perAppUploads, perAppQueue, perAppQueueTimeoutSeconds } = fastify.config;
    const outcomes = fastify.metrics.admissions;
    const admission = (work: AdmittedWork, limits: Partial<AdmissionLimits> & { concurrency: number }) =>
      new Admission({ queue: perAppQueue, queueTimeoutMs: perAppQueueTimeoutSeconds * 1000, ...limits }, (outcome) => outcomes.inc({ work, outcome }));
    const { images } = fastify.config;
    fastify.decorate('admission', {
      requests: admission('requests', { concurrency: perAppConcurrency }),
      uploads: admission('uploads', { concurrency: perAppUploads }),
      // An app alone may fill every render slot; its further renders wait in its own queue, not in
      // the slots' line, so another app's render takes the next slot that frees (contract
      // sections 16 and 18), behind at most one render.
      images: admission('images', {
        concurrency: images.concurrency,
        queue: images.queueLength,
        busy: () => refused.imagesBusy(IMAGES_RETRY_AFTER_SECONDS),
      }),
    });
  },
  { name: 'admission', fastify: '5.x', dependencies: ['metrics'] },
);
