import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import t from 'tap';
import { connectDatabase } from '../db/connect.js';
import type { Database } from '../db/schema.js';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { prepareDatabase } from '../src/services/startup.js';
import { serverUrl } from './helpers/database.js';
import { download } from './helpers/download.js';
import { APP, NO_LOAD_SHEDDING, bucketDetail, call, embeddedData, tokenOf } from './helpers/embedded.js';
import { upload } from './helpers/upload.js';

/** Upgrading: a DATA_DIR of the release that kept its database in PGlite keeps every row. */
if (serverUrl) {
  t.pass('skipped: DATABASE_URL is set, and the embedded server only runs without it');
} else {
  t.test('a DATA_DIR written by the PGlite release: its rows move into the server on the first start', async (t) => {
    const { data } = await embeddedData(t);
    await rm(path.join(data.dataDir, 'postgres'), { recursive: true });
    // The earlier release: the same service, its database in PGlite under DATA_DIR/pgdata.
    const pglite = await PGlite.create({ dataDir: path.join(data.dataDir, 'pgdata'), parsers: { 20: (value: string) => Number(value) } });
    const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
    const earlier = { db, kind: 'embedded' as const, poolStats: () => ({ total: 1, idle: 1, waiting: 0 }), close: () => db.destroy() };
    const config = loadConfig({ DATA_DIR: data.dataDir, LOG_LEVEL: 'silent', BOOTSTRAP_APPS: `${APP.id}:${APP.secret}`, ...NO_LOAD_SHEDDING });
    await prepareDatabase(db, config);
    const before = await buildApp({ config, database: earlier });
    const beforeUrl = await before.listen({ port: 0, host: '127.0.0.1' });
    const token = await tokenOf(beforeUrl);
    const bucket = await call(beforeUrl, '/API/CreateBucket', { AccessToken: token, BucketName: 'from-pglite', OpenToRead: 'true', OpenToUpload: 'false' });
    const uploaded = await upload({ baseUrl: beforeUrl, before: { AccessToken: token, BucketId: bucket.BucketId as number, AliveDays: 3 }, fileName: 'kept.bin', size: 100_000 });
    t.equal(uploaded.body.Code, 0, 'a file stored by the earlier release');
    await before.close();
    await earlier.close();

    // This release, in this process: the same connect and start-up path as the server entry.
    const startCurrent = async (said: string[]) => {
      const database = await connectDatabase({ databaseUrl: undefined, dataDir: data.dataDir, log: { info: (message) => said.push(message) } });
      await prepareDatabase(database.db, config);
      const app = await buildApp({ config, database });
      const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
      return { baseUrl, close: async () => { await app.close(); await database.close(); } };
    };
    const said: string[] = [];
    const current = await startCurrent(said);
    t.ok(said.some((message) => message.startsWith('moving the rows of the earlier database')), 'the start says it moves the rows');
    t.ok(existsSync(path.join(data.dataDir, 'pgdata.imported', 'PG_VERSION')), 'the PGlite folder is kept, renamed');
    t.notOk(existsSync(path.join(data.dataDir, 'pgdata')), 'and no longer where a start would import it again');
    const newToken = await tokenOf(current.baseUrl);
    t.ok(newToken, 'the app of the earlier release still gets a token');
    const detail = await bucketDetail(current.baseUrl, bucket.BucketId);
    t.equal(detail.BucketName, 'from-pglite', 'its bucket is there');
    t.equal(detail.FileCount, 1, 'with its file');
    const file = (await (await fetch(`${current.baseUrl}/API/ViewOneFile?FileKey=${uploaded.body.FileKey}`)).json()) as Record<string, unknown>;
    t.equal(file.Code, 0, 'its file row is there');
    const bytes = await download(current.baseUrl, `/Download/FromKey/${uploaded.body.FileKey}`);
    t.equal(bytes.sha256, uploaded.sha256, 'and its bytes download whole');
    const next = await call(current.baseUrl, '/API/CreateBucket', { AccessToken: newToken, BucketName: 'after-import', OpenToRead: 'true', OpenToUpload: 'false' });
    t.ok((next.BucketId as number) > (bucket.BucketId as number), 'new ids continue after the imported ones');
    await current.close();

    const saidAgain: string[] = [];
    const again = await startCurrent(saidAgain);
    t.notOk(saidAgain.some((message) => message.includes('moving the rows')), 'the next start imports nothing');
    t.equal((await bucketDetail(again.baseUrl, bucket.BucketId)).BucketName, 'from-pglite');
    await again.close();
  });
}
