import { loadConfig, ConfigError, type Config } from './config.js';
import { buildApp } from './app.js';
import { connectDatabase } from '../db/connect.js';
import { prepareDatabase } from './services/startup.js';
import type { AppCredentials } from './services/apps.js';

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

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.lifecycle.shuttingDown = true;
    app.log.info({ signal }, 'shutting down');
    try {
      await app.close();
    } finally {
      await database.close();
    }
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  if (firstApp) announceFirstStartApp(firstApp, config);
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`The service could not start: ${message}\n`);
  process.exit(1);
});
