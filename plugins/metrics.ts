import fp from 'fastify-plugin';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface Metrics {
  /** This instance's own registry: several services in one process (tests) never collide. */
  readonly registry: Registry;
  /** Bytes of the files UploadFile stored. */
  readonly uploadedBytes: Counter;
  /** Body bytes of GET downloads that completed: a 200, or a 206 for its range. */
  readonly downloadedBytes: Counter;
  readonly uploadsInFlight: Gauge;
  /** Runs of the expiry sweeper by outcome, counted by its job. */
  readonly sweeperRuns: Counter<'outcome'>;
  /** Expired files whose row and bytes the sweeper removed, counted by its job per run. */
  readonly sweeperFilesRemoved: Counter;
  /**
   * Seconds since the oldest download not yet written to DownloadTimes was counted (0 when all are
   * written): how far other instances lag behind this one's counts. The downloads plugin sets the
   * source to its counter when it registers; every scrape calls it. Unset, the gauge reads 0.
   */
  readonly counterFlushLag: Gauge;
  counterFlushLagSource: (() => number) | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics;
  }
}

/** Routes that serve file bytes: the contract's `/Download/…` and `/<BucketName>/<RealFileName>`. */
const DOWNLOAD_ROUTE = /^\/(download\/|:)/i;

/** Seconds; uploads and downloads of large files take minutes. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];

/**
 * The instance's metrics (served by GET /metrics). Requests are labelled by operation name or route
 * pattern, never by URL, so bucket and file names, tokens and secrets never become label values.
 */
export default fp(
  async (fastify) => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const registers = [registry];

    const duration = new Histogram({
      name: 'filestore_http_request_duration_seconds',
      help: 'Time from request to the end of the response, by route (operation name or pattern), method and status; _count counts requests.',
      labelNames: ['route', 'method', 'status'],
      buckets: DURATION_BUCKETS,
      registers,
    });

    const metrics: Metrics = {
      registry,
      uploadedBytes: new Counter({ name: 'filestore_uploaded_bytes_total', help: 'Bytes of the files stored by UploadFile.', registers }),
      downloadedBytes: new Counter({
        name: 'filestore_downloaded_bytes_total',
        help: 'Body bytes of completed GET downloads (200, or 206 for its range).',
        registers,
      }),
      uploadsInFlight: new Gauge({ name: 'filestore_uploads_in_flight', help: 'Uploads being received right now.', registers }),
      sweeperRuns: new Counter({
        name: 'filestore_expiry_sweeper_runs_total',
        help: 'Runs of the expiry sweeper, by outcome.',
        labelNames: ['outcome'],
        registers,
      }),
      sweeperFilesRemoved: new Counter({
        name: 'filestore_expiry_sweeper_files_removed_total',
        help: 'Expired files whose row and bytes the sweeper removed.',
        registers,
      }),
      counterFlushLag: new Gauge({
        name: 'filestore_download_counter_flush_lag_seconds',
        help: 'Age of the oldest download count not yet written to the database; 0 when all are written.',
        registers,
        collect() {
          if (metrics.counterFlushLagSource) this.set(metrics.counterFlushLagSource());
        },
      }),
      counterFlushLagSource: undefined,
    };
    fastify.decorate('metrics', metrics);

    // The embedded database has a single connection and no pool to report.
    if (fastify.database.kind === 'postgres') {
      const pool = {
        filestore_db_pool_connections: ['Open connections of the database pool.', 'total'],
        filestore_db_pool_idle_connections: ['Open connections not running a query.', 'idle'],
        filestore_db_pool_waiting_queries: ['Queries waiting for a free connection.', 'waiting'],
      } as const;
      for (const [name, [help, stat]] of Object.entries(pool)) {
        new Gauge({
          name,
          help,
          registers,
          collect() {
            this.set(fastify.database.poolStats()?.[stat] ?? 0);
          },
        });
      }
    }

    // What each route, method and status needs, made once: a request costs a map lookup and an observe.
    const series = new Map<string, { duration: ReturnType<typeof duration.labels>; countsBytes: boolean }>();
    fastify.addHook('onResponse', (request, reply, done) => {
      const { config } = request.routeOptions;
      const route = config.operation ?? config.url ?? 'unmatched';
      const key = `${route} ${request.method} ${reply.statusCode}`;
      let entry = series.get(key);
      if (entry === undefined) {
        const status = reply.statusCode;
        entry = {
          duration: duration.labels(route, request.method, String(status)),
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
    });
  },
  { name: 'metrics', fastify: '5.x', dependencies: ['db'] },
);
