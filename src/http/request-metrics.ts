import type { FastifyReply, FastifyRequest, onRequestAbortHookHandler, onResponseHookHandler } from 'fastify';
import type { Metrics } from '../metrics.js';
import './route-config.js';

/** Routes that serve file bytes: the contract's `/Download/…` and `/<BucketName>/<RealFileName>`. */
const DOWNLOAD_ROUTE = /^\/(download\/|:)/i;

/**
 * Observes every response: its duration by route, method and status, and the bytes of downloads
 * sent to their end. What each route, method and status needs is made once: a request costs a map
 * lookup and an observe.
 */
export function requestMetricsHook(metrics: Metrics): onResponseHookHandler {
  const series = new Map<string, { duration: ReturnType<Metrics['requestDuration']['labels']>; countsBytes: boolean }>();
  return (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const { config } = request.routeOptions;
    const route = config.operation ?? config.url ?? 'unmatched';
    const key = `${route} ${request.method} ${reply.statusCode}`;
    let entry = series.get(key);
    if (entry === undefined) {
      const status = reply.statusCode;
      entry = {
        duration: metrics.requestDuration.labels(route, request.method, String(status)),
        countsBytes: DOWNLOAD_ROUTE.test(route) && request.method === 'GET' && (status === 200 || status === 206),
      };
      series.set(key, entry);
    }
    entry.duration.observe(reply.elapsedTime / 1000);
    // Only a response sent to its end: an aborted download is not bytes downloaded.
    if (entry.countsBytes && reply.raw.writableFinished) {
      metrics.downloadedBytes.inc(Number(reply.getHeader('content-length')) || 0);
    }
    done();
  };
}

/**
 * A request whose client went away before its answer was sent has no response to observe: it is
 * counted as a client abort, never as a fault of the service.
 */
export function abortedRequestMetricsHook(metrics: Metrics): onRequestAbortHookHandler {
  return (request: FastifyRequest, done: () => void) => {
    const { config } = request.routeOptions;
    metrics.clientAborts.labels(config.operation ?? config.url ?? 'unmatched', request.method).inc();
    done();
  };
}
