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
      // Half the instance's render slots at most per app, so another app's renders always find one,
      // behind the renders' own short queue and its 503 (contract section 16).
      images: admission('images', {
        concurrency: Math.max(1, Math.floor(images.concurrency / 2)),
        queue: images.queueLength,
        busy: () => refused.imagesBusy(IMAGES_RETRY_AFTER_SECONDS),
      }),
    });
  },
  { name: 'admission', fastify: '5.x', dependencies: ['metrics'] },
);
