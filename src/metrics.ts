import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Seconds; uploads and downloads of large files take minutes. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];

/** Readings taken at each scrape, from the parts that own them. */
export interface MetricSources {
  /** Connections of the database pool; undefined where there is no pool to report. */
  poolStats(): { total: number; idle: number; waiting: number } | undefined;
  /** Seconds since the oldest download not yet written to DownloadTimes was counted; 0 when all are written. */
  counterFlushLag(): number;
  /** Whether the instance sheds load right now. */
  underPressure(): boolean;
  /** Whether the rate limits are counted in Redis, shared by all instances, right now. */
  rateLimitShared(): boolean;
  /** Heavy requests running and waiting for their app's turn, over all apps. */
  admissionLoad(): Record<'requests' | 'uploads' | 'images', { running: number; waiting: number }>;
}

export interface Metrics {
  /** This instance's own registry: several services in one process (tests) never collide. */
  readonly registry: Registry;
  /** Time from request to the end of its response, by route (operation name or pattern), method and status. */
  readonly requestDuration: Histogram<'route' | 'method' | 'status'>;
  /** Requests whose client went away before their answer, by route and method. */
  readonly clientAborts: Counter<'route' | 'method'>;
  /** Bytes of the files UploadFile stored. */
  readonly uploadedBytes: Counter;
  /** Body bytes of GET downloads that completed: a 200, or a 206 for its range. */
  readonly downloadedBytes: Counter;
  readonly uploadsInFlight: Gauge;
  /** Runs of the expiry sweeper by outcome. */
  readonly sweeperRuns: Counter<'outcome'>;
  /** Expired files whose row and bytes the sweeper removed. */
  readonly sweeperFilesRemoved: Counter;
  /** Resumable uploads by what happened to them: created, completed, refused at completion, terminated. */
  readonly resumableUploads: Counter<'event'>;
  /** Bytes that PATCH requests added to resumable uploads. */
  readonly resumableReceivedBytes: Counter;
  /** Per-app admission of heavy work, by outcome (never by app: label values stay bounded). */
  readonly admissions: Counter<'work' | 'outcome'>;
  /** Image renders by outcome: rendered, or unchanged (the file did not decode, or had too many pixels). */
  readonly imageRenders: Counter<'outcome'>;
  /** Image variants served, by where their bytes came from: the store (made before, by any instance) or a render for this request. */
  readonly imageVariantsServed: Counter<'from'>;
}

/**
 * The instance's metrics, served by GET /metrics. Requests are labelled by operation name or route
 * pattern, never by URL, so bucket and file names, tokens and secrets never become label values.
 */
export function createMetrics(sources: MetricSources): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const pool = {
    filestore_db_pool_connections: ['Open connections of the database pool.', 'total'],
    filestore_db_pool_idle_connections: ['Open connections not running a query.', 'idle'],
    filestore_db_pool_waiting_queries: ['Queries waiting for a free connection.', 'waiting'],
  } as const;
  if (sources.poolStats()) {
    for (const [name, [help, stat]] of Object.entries(pool)) {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(sources.poolStats()?.[stat] ?? 0);
        },
      });
    }
  }
  new Gauge({
    name: 'filestore_download_counter_flush_lag_seconds',
    help: 'Age of the oldest download count not yet written to the database; 0 when all are written.',
    registers,
    collect() {
      this.set(sources.counterFlushLag());
    },
  });
  new Gauge({
    name: 'filestore_under_pressure',
    help: '1 while the instance sheds load (answers 503), else 0.',
    registers,
    collect() {
      this.set(sources.underPressure() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'filestore_rate_limit_shared',
    help: '1 while rate limits are counted in Redis for all instances; 0 while this instance counts alone (no REDIS_URL, or Redis unreachable).',
    registers,
    collect() {
      this.set(sources.rateLimitShared() ? 1 : 0);
    },
  });

  const admission = {
    filestore_admission_running: ['Heavy requests running now, over all apps, by kind of work (requests: listings and deletions; uploads).', 'running'],
    filestore_admission_waiting: ["Heavy requests waiting for their app's turn now, over all apps, by kind of work.", 'waiting'],
  } as const;
  for (const [name, [help, stat]] of Object.entries(admission)) {
    new Gauge({
      name,
      help,
      labelNames: ['work'],
      registers,
      collect() {
        for (const [work, load] of Object.entries(sources.admissionLoad())) this.set({ work }, load[stat]);
      },
    });
  }

  return {
    registry,
    requestDuration: new Histogram({
      name: 'filestore_http_request_duration_seconds',
      help: 'Time from request to the end of the response, by route (operation name or pattern), method and status; _count counts requests.',
      labelNames: ['route', 'method', 'status'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    clientAborts: new Counter({
      name: 'filestore_client_aborts_total',
      help: 'Requests whose client went away before the answer was sent, by route and method.',
      labelNames: ['route', 'method'] as const,
      registers,
    }),
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
    resumableUploads: new Counter({
      name: 'filestore_resumable_uploads_total',
      help: 'Resumable uploads by event: created, completed, refused (at completion), terminated; created minus the others is roughly those in progress or expired.',
      labelNames: ['event'],
      registers,
    }),
    resumableReceivedBytes: new Counter({
      name: 'filestore_resumable_received_bytes_total',
      help: 'Bytes that requests added to resumable uploads.',
      registers,
    }),
    admissions: new Counter({
      name: 'filestore_admission_total',
      help: "Heavy requests by kind of work (requests: listings and deletions of buckets and apps; uploads) and outcome: admitted (started, at once or after waiting), queued (had to wait), refused (the app's queue was full), timed_out (waited too long), abandoned (the client left while waiting).",
      labelNames: ['work', 'outcome'],
      registers,
    }),
    imageRenders: new Counter({
      name: 'filestore_image_renders_total',
      help: 'Image renders by outcome: rendered, or unchanged (the file did not decode, or had too many pixels, and was served as stored).',
      labelNames: ['outcome'],
      registers,
    }),
    imageVariantsServed: new Counter({
      name: 'filestore_image_variants_served_total',
      help: 'Image variants served, by where their bytes came from: store (kept from an earlier render on any instance) or render (made for this request).',
      labelNames: ['from'],
      registers,
    }),
  };
}
