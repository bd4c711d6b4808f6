import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import t from 'tap';
import { LEASE_LAPSE_SECONDS, renewLease, sweepDeadInstances } from '../src/services/leases.js';
import { createBucket } from './helpers/buckets.js';
import { serverUrl } from './helpers/database.js';
import { serverData, startServerProcess, waitFor, type ServerProcess } from './helpers/process.js';
import { diskStoreOf, startService } from './helpers/service.js';
import { upload } from './helpers/upload.js';

const MiB = 1024 * 1024;
const APP = { id: 'lease-app', secret: 'lease-app-secret-0123456789' };

const tempFiles = async (storageDir: string) => (await readdir(path.join(storageDir, 'tmp'))).sort();

t.test('a sweep removes the temp files of dead instances only, never a live upload', async (t) => {
  const storageDir = await mkdtemp(path.join(tmpdir(), 'filestore-leases-'));
  t.teardown(() => rm(storageDir, { recursive: true, force: true }));
  const alpha = await startService(t, { env: { STORAGE_DIR: storageDir, INSTANCE_ID: 'alpha' } });
  const beta = await startService(t, { env: { STORAGE_DIR: storageDir, INSTANCE_ID: 'beta' } });
  const { db } = alpha.app;
  const tmp = diskStoreOf(alpha).tmpDir;
  // Both hold their leases before anything is left behind.
  await alpha.app.ready();
  const betaUrl = await beta.listen();

  // gamma never held a lease (or gave it up), delta's lapsed, epsilon's is live.
  await renewLease(db, 'delta');
  await db.updateTable('instance_leases').set({ heartbeat_at: sql<Date>`now() - make_interval(secs => ${LEASE_LAPSE_SECONDS + 5})` }).where('instance_id', '=', 'delta').execute();
  await renewLease(db, 'epsilon');
  for (const owner of ['gamma', 'delta', 'epsilon']) await writeFile(path.join(tmp, `${owner}_0123abcd.part`), 'left behind');

  const owner = await beta.newApp();
  const bucketId = await createBucket(beta, owner.token);
  const live = upload({ baseUrl: betaUrl, query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, size: 4 * MiB, chunkDelayMs: 20 });
  await waitFor('the upload to stream in', async () => (await tempFiles(storageDir)).some((name) => name.startsWith('beta_')));

  // The instances' own start-up sweeps may get there first: what counts is what is left.
  await sweepDeadInstances(db, alpha.app.storage, 'alpha');
  const left = await tempFiles(storageDir);
  t.same(left.filter((name) => !name.startsWith('beta_')), ['epsilon_0123abcd.part'], 'the live lease keeps its file');
  t.equal(left.filter((name) => name.startsWith('beta_')).length, 1, 'the live upload is untouched');
  t.same(
    (await db.selectFrom('instance_leases').select('instance_id').execute()).map((row) => row.instance_id).sort(),
    ['alpha', 'beta', 'epsilon'],
    'the lapsed lease is gone; the live ones stay',
  );

  const result = await live;
  t.equal(result.body.Code, 0, 'the live upload completes');
  const row = await db.selectFrom('files').select('sha256').where('file_key', '=', result.body.FileKey as number).executeTakeFirst();
  t.equal(row?.sha256, result.sha256, 'with its bytes');
});

t.test('a restarted instance removes what its killed predecessor left, before it listens', async (t) => {
  const data = await serverData(t, 'lease-restart');
  const storageDir = path.join(data.dataDir, 'files');
  const env = { ...data.env, BOOTSTRAP_APPS: `${APP.id}:${APP.secret}`, INSTANCE_ID: 'steady' };
  let server: ServerProcess = await startServerProcess(env);
  t.teardown(() => server.stop('SIGKILL'));
  const params = await tokenAndBucket(server.baseUrl, 'restart');
  const cut = upload({ baseUrl: server.baseUrl, query: params, size: 64 * MiB, chunkDelayMs: 50 }).catch((error: unknown) => error);
  await waitFor('the upload to stream in', async () => (await tempFiles(storageDir)).length === 1);
  await server.stop('SIGKILL');
  await cut;
  t.match(await tempFiles(storageDir), [/^steady_[a-z0-9]+\.part$/], 'kill -9 left the temp file, named by the instance');

  server = await startServerProcess(env);
  t.same(await tempFiles(storageDir), [], 'gone by the time the restart listens');
});

async function tokenAndBucket(baseUrl: string, name: string) {
  const post = async (url: string, fields: Record<string, string>) =>
    (await (await fetch(`${baseUrl}${url}`, { method: 'POST', body: new URLSearchParams(fields) })).json()) as Record<string, unknown>;
  const AccessToken = String((await post('/API/AccessToken', { AppId: APP.id, AppSecret: APP.secret })).AccessToken);
  const BucketId = Number((await post('/API/CreateBucket', { AccessToken, BucketName: name, OpenToRead: 'true', OpenToUpload: 'false' })).BucketId);
  return { AccessToken, BucketId, AliveDays: 1 };
}

t.test(
  'kill -9 mid-upload with a second instance running: the stray bytes are gone within 60 s, the other upload untouched',
  { skip: serverUrl ? false : 'needs PostgreSQL: the embedded database belongs to one process' },
  async (t) => {
    const data = await serverData(t, 'lease-fleet');
    const storageDir = path.join(data.dataDir, 'files');
    const env = { ...data.env, STORAGE_DIR: storageDir, BOOTSTRAP_APPS: `${APP.id}:${APP.secret}` };
    const [doomed, survivor] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
    t.teardown(() => Promise.all([doomed.stop('SIGKILL'), survivor.stop('SIGKILL')]));
    const params = await tokenAndBucket(survivor.baseUrl, 'fleet');

    const cut = upload({ baseUrl: doomed.baseUrl, query: params, fileName: 'cut.bin', size: 256 * MiB, chunkDelayMs: 20 }).catch((error: unknown) => error);
    await waitFor('the doomed upload to stream in', async () => (await tempFiles(storageDir)).length === 1);
    const [stray] = await tempFiles(storageDir);
    // Slow enough to be streaming for the whole wait below.
    const live = upload({ baseUrl: survivor.baseUrl, query: params, fileName: 'live.bin', size: 64 * MiB, chunkDelayMs: 300 });
    await waitFor('the live upload to stream in', async () => (await tempFiles(storageDir)).length === 2);

    await doomed.stop('SIGKILL');
    const killed = Date.now();
    await cut;
    await waitFor('the stray bytes to go', async () => !(await tempFiles(storageDir)).includes(stray as string), 120_000, 250);
    const seconds = (Date.now() - killed) / 1000;
    t.comment(`the stray temp file was removed ${seconds.toFixed(1)} s after kill -9`);
    t.ok(seconds < 60, 'within 60 s');
    t.equal((await tempFiles(storageDir)).length, 1, 'the live upload still streams');

    const result = await live;
    t.equal(result.body.Code, 0, 'the live upload completes');
    const download = await fetch(String(result.body.Path).replace(/^https?:\/\/[^/]+/, survivor.baseUrl));
    const { createHash } = await import('node:crypto');
    t.equal(createHash('sha256').update(Buffer.from(await download.arrayBuffer())).digest('hex'), result.sha256, 'whole');
  },
);
