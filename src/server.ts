import closeWithGrace from 'close-with-grace';
import { loadConfig, ConfigError, type Config } from './config.js';
import { buildApp } from './app.js';
import { trackConnections } from './http/connection-drain.js';
import { connectDatabase } from '../db/connect.js';
import { releaseLease } from './services/leases.js';
import { prepareDatabase } from './services/startup.js';
import { onStopSignals, STOP_SIGNALS } from './stop-signals.js';
import type { AppCredentials } from './services/apps.js';

/** After the grace period: time left for the jobs to stop, counts to flush and the database to close. */
const CLOSE_TIMEOUT_MS = 5_000;
/** Kept out of the close timeout for removing what cut uploads left, whatever else overran. */
const CLEANUP_RESERVE_MS = 1_500;
/** During shutdown, a keep-alive connection on which nothing arrived for this long is closed. */
const DRAIN_QUIET_MS = 1_000;
const DRAIN_CHECK_INTERVAL_MS = 100;

function announceFirstStartApp(app: AppCredentials, config: Config): void {
  // Printed once, straight to the terminal and not through the logger: it is the only time this
  // secret exists outside its hash.
  const base = config.publicUrl ?? `http://localhost:${config.port}`;
  process.stdout.write(
    [
      '',
      'First start: an app was created for you. Keep its secret now; it is never shown again.',
      `  AppId:     ${app.appId}`,
      `  AppSecret: ${app.appSecret}`,
      `Get an AccessToken: curl -X POST ${base}/API/AccessToken -d AppId=<AppId> -d AppSecret=<AppSecret>`,
      '',
      '',
    ].join('\n'),
  );
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }

  // Before the logger exists (it comes with the app): the embedded server's start-up goes to stdout.
  const log = { info: (message: string) => process.stdout.write(`${message}\n`) };
  const database = await connectDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, log });
  let firstApp: AppCredentials | undefined;
  let app: Awaited<ReturnType<typeof buildApp>>;
  try {
    firstApp = await prepareDatabase(database.db, config);
    app = await buildApp({ config, database });
  } catch (error) {
    // The embedded server never outlives a start that failed.
    await database.close().catch(() => {});
    throw error;
  }
  const connections = trackConnections(app.server, { quietMs: DRAIN_QUIET_MS, checkIntervalMs: DRAIN_CHECK_INTERVAL_MS });

  /**
   * On SIGTERM/SIGINT (or an uncaught error): /ready turns 503 at once and the listener closes;
   * open connections drain (a request arriving on one gets 503 with `Connection: close`, a quiet one
   * is closed), in-flight requests get the grace period, then their connections are closed; then the onClose
   * hooks run (uploads settle, jobs stop and flush), what uploads left is removed, the lease is
   * given up and the database closes last. A close that overruns by CLOSE_TIMEOUT_MS stops waiting,
   * still removes what uploads left, and exits with code 1; a second signal exits at once with code 1
   * (see stop-signals.ts for the copy of a Ctrl-C that npm forwards). The last line logged is "stopped".
   */
  const graceMs = config.shutdownGraceSeconds * 1000;
  let stopSignal: NodeJS.Signals | undefined;
  const shutdown = closeWithGrace({ delay: graceMs + CLOSE_TIMEOUT_MS, logger: app.log, skip: [...STOP_SIGNALS] }, async ({ signal, err }) => {
    app.lifecycle.shuttingDown = true;
    if (err) app.log.error({ err }, 'shutting down after an unexpected error');
    else app.log.info({ signal: signal ?? stopSignal, graceSeconds: config.shutdownGraceSeconds }, 'shutting down');
    const deadline = setTimeout(() => {
      app.log.warn('grace period over: closing the connections still open');
      app.server.closeAllConnections();
    }, graceMs);
    let overran: NodeJS.Timeout | undefined;
    const outOfTime = new Promise<false>((resolve) => {
      overran = setTimeout(() => resolve(false), graceMs + CLOSE_TIMEOUT_MS - CLEANUP_RESERVE_MS);
    });
    let closed = false;
    try {
      closed = await Promise.race([connections.drain().then(() => app.close()).then(() => true as const), outOfTime]);
    } finally {
      clearTimeout(deadline);
      clearTimeout(overran);
      // Uploads cut by the grace period have already removed their temp files; this catches any that could not.
      await app.storage.abortWritesInProgress();
      // Nothing of this instance is left in the store: its lease has nothing more to guard.
      await releaseLease(database.db, config.instanceId).catch((error: unknown) => app.log.warn({ err: error }, 'the lease was not released'));
      await database.close();
    }
    // Exits with code 1, as a close that overran always has; what uploads left is removed by now.
    if (!closed) throw new Error('the close overran its time limit');
    app.log.info('stopped');
  });
  const stopAtOnce = (signal: NodeJS.Signals) => {
    app.log.error(`second ${signal}: stopping at once`);
    process.exit(1);
  };
  onStopSignals({
    stop: (signal) => {
      // A shutdown that an unexpected error began is under way: a signal now is the second one.
      if (app.lifecycle.shuttingDown) return stopAtOnce(signal);
      stopSignal = signal;
      void shutdown.close();
    },
    force: stopAtOnce,
  });

  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await app.close().catch(() => {});
    await database.close().catch(() => {});
    throw error;
  }
  if (firstApp) announceFirstStartApp(firstApp, config);
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`The service could not start: ${message}\n`);
  process.exit(1);
});
