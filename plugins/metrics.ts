import fp from 'fastify-plugin';
import type { DatabaseHandle } from '../db/connect.js';
import { abortedRequestMetricsHook, requestMetricsHook } from '../src/http/request-metrics.js';
import { createMetrics, type Metrics } from '../src/metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics;
  }
}

/** The instance's metrics (served by GET /metrics), fed by every response. */
export default fp<{ database: DatabaseHandle }>(
  async (fastify, { database }) => {
    const metrics = createMetrics({
      poolStats: () => database.poolStats(),
      counterFlushLag: () => fastify.downloadCounter.lagSeconds(),
      underPressure: () => fastify.isUnderPressure(),
      rateLimitShared: () => fastify.rateLimitShared(),
      // Read at each scrape; the admission plugin, registered after this one, counts its outcomes here.
      admissionLoad: () => ({ requests: fastify.admission.requests.load(), uploads: fastify.admission.uploads.load(), images: fastify.admission.images.load() }),
    });
    fastify.decorate('metrics', metrics);
    fastify.addHook('onResponse', requestMetricsHook(metrics));
    fastify.addHook('onRequestAbort', abortedRequestMetricsHook(metrics));
  },
  { name: 'metrics', fastify: '5.x', dependencies: ['download-counter'] },
);
