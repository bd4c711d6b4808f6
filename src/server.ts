import closeWithGrace from 'close-with-grace';
import { loadConfig, ConfigError, type Config } from './config.js';
import { buildApp } from './app.js';
import { connectDatabase } from '../db/connect.js';
import { prepareDatabase } from './services/startup.js';
import type { AppCredentials } from './services/apps.js';

/** After the grace period: time left for the jobs to stop, counts to flush and the database to close. */
const CLOSE_TIMEOUT_MS = 5_000;
/** Node keeps a keep-alive connection open after a response that ends during shutdown; close those this often. */
const IDLE_SWEEP_INTERVAL_MS = 250;

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

  const database = await connectDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const firstApp = await prepareDatabase(database.db, config);
  const app = await buildApp({ config, database });

  /**
   * On SIGTERM/SIGINT (or an uncaught error): /ready turns 503 at once and the listener closes;
   * in-flight requests get the grace period, then their connections are closed; then the onClose
   * hooks run (uploads settle, jobs stop and flush) and the database closes last. A second signal,
   * or a close that overruns by CLOSE_TIMEOUT_MS, exits at once with code 1.
   */
  const graceMs = config.shutdownGraceSeconds * 1000;
  closeWithGrace({ delay: graceMs + CLOSE_TIMEOUT_MS, logger: app.log }, async ({ signal, err }) => {
    app.lifecycle.shuttingDown = true;
    if (err) app.log.error({ err }, 'shutting down after an unexpected error');
    else app.log.info({ signal, graceSeconds: config.shutdownGraceSeconds }, 'shutting down');
    const idleSweep = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_INTERVAL_MS);
    const deadline = setTimeout(() => {
      app.log.warn('grace period over: closing the connections still open');
      app.server.closeAllConnections();
    }, graceMs);
    try {
      await app.close();
    } finally {
      clearInterval(idleSweep);
      clearTimeout(deadline);
      await database.close();
    }
  });

  await app.listen({ port: config.port, host: config.host });
  if (firstApp) announceFirstStartApp(firstApp, config);
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`The service could not start: ${message}\n`);
  process.exit(1);
});
