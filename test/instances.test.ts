import { createHash } from 'node:crypto';
import t from 'tap';
import { connectDatabase } from '../db/connect.js';
import { loadConfig } from '../src/config.js';
import { createBackend } from '../src/storage/backends.js';
import { serverUrl } from './helpers/database.js';
import { serverData, startServerProcess, waitFor, type ServerProcess } from './helpers/process.js';
import { storedKeys } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

/**
 * Three server processes on one PostgreSQL database and one storage folder, as behind a load
 * balancer. The embedded database belongs to the one process that opened it, so this applies
 * only to PostgreSQL.
 */
const APP = { id: 'fleet-app', secret: 'fleet-app-secret-0123456789' };
const DAY_MS = 86_400_000;

interface Json {
  Code: number;
  [field: string]: unknown;
}

async function getJson(url: string): Promise<Json> {
  return (await (await fetch(url)).json()) as Json;
}

async function postJson(url: string, fields: Record<string, string | number | boolean>): Promise<Json> {
  const body = new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)]));
  return (await (await fetch(url, { method: 'POST', body })).json()) as Json;
}

async function sha256Of(url: string): Promise<{ status: number; sha256: string }> {
  const response = await fetch(url);
  const hash = createHash('sha256').update(Buffer.from(await response.arrayBuffer()));
  return { status: response.status, sha256: hash.digest('hex') };
}

/** What the instance's expiry sweeps reported removing, from its debug log lines. */
function sweptFiles(server: ServerProcess): number {
  let total = 0;
  for (const line of server.output().split('\n')) {
    if (!line.includes('"job":"expiry-sweep"')) continue;
    const entry = JSON.parse(line) as { result?: { files?: number } };
    total += entry.result?.files ?? 0;
  }
  return total;
}

t.test('a fleet of three instances on one database and one storage folder', { skip: serverUrl ? false : 'needs PostgreSQL: the embedded database belongs to one process' }, async (t) => {
  const data = await serverData(t, 'fleet');
  const env = { ...data.env, BOOTSTRAP_APPS: `${APP.id}:${APP.secret}`, SWEEP_INTERVAL_SECONDS: '1', LOG_LEVEL: 'debug' };
  // The fleet's store as the instances see it, to look at what is stored.
  const store = (await createBackend(loadConfig(env))).blobs;
  // Started together: migrations and app provisioning race, as in a rolling deploy.
  const fleet = await Promise.all([startServerProcess(env), startServerProcess(env), startServerProcess(env)]);
  t.teardown(() => Promise.all(fleet.map((server) => server.stop())));
  const [a, b, c] = fleet.map((server) => server.baseUrl);

  const token = (await postJson(`${a}/API/AccessToken`, { AppId: APP.id, AppSecret: APP.secret })).AccessToken as string;
  t.equal((await getJson(`${c}/API/ViewMyBuckets?AccessToken=${token}`)).Code, 0, 'a token from one instance works on another');

  // Concurrent CreateBucket with one name across the instances: exactly one wins.
  const name = `fleet-${process.pid}`;
  const creates = await Promise.all(
    Array.from({ length: 9 }, (_, i) => postJson(`${fleet[i % 3].baseUrl}/API/CreateBucket`, { AccessToken: token, BucketName: i % 2 ? name : name.toUpperCase(), OpenToRead: true, OpenToUpload: false })),
  );
  t.equal(creates.filter((r) => r.Code === 0).length, 1, 'one CreateBucket succeeds');
  t.same(
    creates.filter((r) => r.Code !== 0).map((r) => r.Message),
    Array(8).fill('There is one bucket already called that name!'),
  );
  const bucketId = creates.find((r) => r.Code === 0)?.BucketId as number;

  // Uploaded on one, downloadable on the others at once.
  const uploaded = await upload({ baseUrl: a, before: { AccessToken: token, BucketId: bucketId, AliveDays: 1 }, fileName: 'shared.bin', size: 3 * 1024 * 1024 });
  const fileKey = uploaded.body.FileKey as number;
  for (const base of [b, c]) {
    t.same(await sha256Of(`${base}/Download/FromKey/${fileKey}`), { status: 200, sha256: uploaded.sha256 }, `downloaded whole from ${base}`);
  }

  // Download counts from all instances add up exactly after the flush.
  const perInstance = 40;
  await Promise.all(fleet.flatMap((server) => Array.from({ length: perInstance }, () => sha256Of(`${server.baseUrl}/Download/FromKey/${fileKey}`))));
  const downloadTimes = async (base: string) => ((await getJson(`${base}/API/ViewOneFile?FileKey=${fileKey}`)).File as { DownloadTimes: number }).DownloadTimes;
  // Flushed about every second; a loaded machine may take longer.
  await waitFor('the download counts to be flushed', async () => (await downloadTimes(a)) >= 2 + 3 * perInstance);
  for (const base of [a, b, c]) {
    t.equal(await downloadTimes(base), 2 + 3 * perInstance, `${base} sees every instance's downloads`);
  }

  // A delete on one is seen everywhere at once.
  t.equal((await postJson(`${b}/API/DeleteFile`, { AccessToken: token, FileKey: fileKey })).Code, 0);
  for (const base of [a, c]) {
    t.equal((await fetch(`${base}/Download/FromKey/${fileKey}`)).status, 404, `${base} no longer serves it`);
    t.equal((await getJson(`${base}/API/ViewOneFile?FileKey=${fileKey}`)).Message, 'Could not find that file.');
  }

  // Sweepers on all instances together remove each expired file once.
  const expiring = 30;
  for (let i = 0; i < expiring; i++) {
    await upload({ baseUrl: fleet[i % 3].baseUrl, query: { AccessToken: token, BucketId: bucketId, AliveDays: 1 }, fileName: `old-${i}.txt`, size: 100 });
  }
  const before = fleet.map(sweptFiles);
  const past = new Date(Date.now() - 2 * DAY_MS);
  const pool = await connectDatabase({ databaseUrl: data.databaseUrl, dataDir: '' });
  t.teardown(() => pool.close());
  await pool.db.updateTable('files').set({ upload_time: past, expires_at: new Date(past.getTime() + DAY_MS) }).execute();
  await waitFor('the expired rows to go', async () => (await pool.db.selectFrom('files').select('file_key').execute()).length === 0);
  // Each sweep logs once it has removed its files' bytes too.
  await waitFor('every removal to be logged', () => fleet.reduce((sum, server, i) => sum + sweptFiles(server) - (before[i] ?? 0), 0) >= expiring);
  t.same(await pool.db.selectFrom('files').select('file_key').execute(), [], 'every expired row is gone');
  t.same(await storedKeys(store), [], 'and every byte');
  const swept = fleet.map((server, i) => sweptFiles(server) - before[i]);
  t.equal(swept.reduce((sum, n) => sum + n, 0), expiring, `each removed once (per instance: ${swept.join(', ')})`);
  t.notMatch(fleet.map((server) => server.output()).join('\n'), /"level":50/, 'no instance logged an error');
});
