import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { startEmbeddedServer } from '../db/embedded-server.js';
import { seedEmbeddedCluster, serverUrl } from './helpers/database.js';
import { bucketDetail, call, embeddedData, postmasterPid, running, tokenOf } from './helpers/embedded.js';
import { startServerProcess } from './helpers/process.js';

/** The service's own PostgreSQL server: its lifecycle around the service's, as a user would meet it. */
if (serverUrl) {
  t.pass('skipped: DATABASE_URL is set, and the embedded server only runs without it');
} else {
  t.test('kill -9 of the service: the next start stops the server left behind, and every committed row is there', async (t) => {
    const { data, env } = await embeddedData(t);
    const first = await startServerProcess(env);
    t.teardown(() => first.stop('SIGKILL'));
    const token = await tokenOf(first.baseUrl);
    const created = await call(first.baseUrl, '/API/CreateBucket', { AccessToken: token, BucketName: 'survives-kill', OpenToRead: 'true', OpenToUpload: 'false' });
    t.equal(created.Code, 0, 'a bucket is created (committed)');
    const leftBehind = await postmasterPid(data.dataDir);

    await first.stop('SIGKILL');
    t.ok(running(leftBehind), 'the database server outlived the killed service');

    const second = await startServerProcess(env);
    t.teardown(() => second.stop('SIGKILL'));
    t.match(second.output(), `stopping the embedded PostgreSQL server (process ${leftBehind}) left running by an earlier start`);
    t.notOk(running(leftBehind), 'the server left behind is gone');
    const detail = await bucketDetail(second.baseUrl, created.BucketId);
    t.equal(detail.Code, 0, 'the bucket committed before the kill is there');
    t.equal(detail.BucketName, 'survives-kill');

    const serverPid = await postmasterPid(data.dataDir);
    t.equal(await second.stop('SIGTERM'), 0, 'SIGTERM: the service exits cleanly');
    t.notOk(running(serverPid), 'and its database server stopped with it');
    t.notOk(existsSync(path.join(data.dataDir, 'postgres', 'postmaster.pid')), 'the cluster was shut down cleanly');
  });


  t.test('a DATA_DIR too deep for a socket path: the socket goes to a private temp folder, removed on stop', async (t) => {
    const root = await mkdtemp(path.join(tmpdir(), 'filestore-deep-'));
    t.teardown(() => rm(root, { recursive: true, force: true }));
    // As root the server runs as an unprivileged user, who must pass through this folder.
    await chmod(root, 0o755);
    const dataDir = path.join(root, 'a-folder-name-long-enough-to-push-the-socket-path'.repeat(2));
    await mkdir(dataDir, { recursive: true });
    await seedEmbeddedCluster(dataDir);
    const said: string[] = [];
    const server = await startEmbeddedServer({ dataDir, log: { info: (message) => said.push(message) } });
    t.teardown(() => server.stop());
    t.ok(server.socketDir.startsWith(tmpdir()) && !server.socketDir.startsWith(dataDir), 'socket in the temp folder');
    t.ok(said.some((message) => message.includes(`socket is in ${server.socketDir}`)), 'and the log says where');
    const client = new pg.Client({ host: server.socketDir, port: server.port, user: server.user, database: server.database });
    await client.connect();
    t.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1, 'reachable through it');
    t.equal((await client.query("SELECT current_setting('listen_addresses') AS l")).rows[0].l, '', 'no TCP port');
    await client.end();
    await server.stop();
    t.notOk(existsSync(server.socketDir), 'the temp socket folder is removed');
  });
}
