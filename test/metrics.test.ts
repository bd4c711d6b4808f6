import t from 'tap';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { startService, type TestService } from './helpers/service.js';
import { storeFile } from './helpers/stored-files.js';
import { upload } from './helpers/upload.js';

async function scrape(service: TestService): Promise<string> {
  const response = await service.app.inject({ url: '/metrics' });
  if (response.statusCode !== 200) throw new Error(`/metrics answered ${response.statusCode}`);
  return response.body;
}

/** The value of one sample, e.g. `filestore_uploaded_bytes_total` or `name{label="x"}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

t.test('/metrics after some traffic: routes by pattern, bytes counted, process and pool metrics', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketName = uniqueBucketName('metrics');
  const bucketId = await createBucket(service, owner.token, { name: bucketName });

  const uploaded = await upload({ baseUrl, query: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'secret-plans.txt', size: 300_000 });
  t.equal(uploaded.body.Code, 0);
  for (const url of [`/API/ViewBucketDetail?BucketId=${bucketId}`, `/api/viewbucketdetailtry?bucketid=${bucketId}`]) {
    t.equal((await service.app.inject({ url })).statusCode, 200);
  }
  t.equal((await service.app.inject({ url: '/API/NoSuchOperation' })).statusCode, 404);
  // Over a real socket: only a response that was sent to its end counts.
  const fileKey = uploaded.body.FileKey as number;
  t.equal((await (await fetch(`${baseUrl}/${bucketName}/secret-plans.txt`)).arrayBuffer()).byteLength, 300_000);
  t.equal((await (await fetch(`${baseUrl}/Download/FromKey/${fileKey}`)).arrayBuffer()).byteLength, 300_000);
  t.equal((await fetch(`${baseUrl}/Download/FromKey/${fileKey}`, { method: 'HEAD' })).status, 200);

  const response = await service.app.inject({ url: '/metrics' });
  t.match(response.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  const text = response.body;
  const count = (labels: string) => sample(text, `filestore_http_request_duration_seconds_count{${labels}}`);
  t.equal(count('route="ViewBucketDetail",method="GET",status="200"'), 2, 'both spellings and the …Try alias count as one operation');
  t.equal(count('route="UploadFile",method="POST",status="200"'), 1);
  t.equal(count('route="CreateBucket",method="POST",status="200"'), 1);
  t.equal(count('route="/Download/FromKey/:key",method="GET",status="200"'), 1, 'other routes by pattern');
  t.equal(count('route="/:bucket/:file",method="GET",status="200"'), 1, 'InternetPaths by pattern, never by name');
  t.equal(count('route="unmatched",method="GET",status="404"'), 1);
  t.notMatch(text, bucketName, 'no bucket name in any label');
  t.notMatch(text, 'secret-plans', 'no file name');
  t.notMatch(text, owner.token, 'no token');
  t.notMatch(text, /route="[^"]*\?/, 'no query string');

  t.equal(sample(text, 'filestore_uploaded_bytes_total'), 300_000);
  t.equal(sample(text, 'filestore_downloaded_bytes_total'), 600_000, 'the HEAD request sent no body and is not counted');
  t.equal(sample(text, 'filestore_uploads_in_flight'), 0);
  t.ok(sample(text, 'process_cpu_user_seconds_total')! > 0, 'default process metrics');
  t.ok(sample(text, 'nodejs_heap_size_used_bytes')! > 0);
  t.ok(sample(text, 'filestore_db_pool_connections')! >= 1, 'pool size');
  t.type(sample(text, 'filestore_db_pool_idle_connections'), 'number');
  t.equal(sample(text, 'filestore_db_pool_waiting_queries'), 0);
});

t.test('the download counter and the expiry sweeper feed their metrics', async (t) => {
  const service = await startService(t, { env: { SWEEP_INTERVAL_SECONDS: '1' } });
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const file = await storeFile(service, bucketId);
  t.equal(sample(await scrape(service), 'filestore_download_counter_flush_lag_seconds'), 0, 'nothing to write');

  const baseUrl = await service.listen();
  // The flush job runs every second and may write the count before the scrape: try a few times.
  let lag = 0;
  for (let i = 0; i < 5 && lag === 0; i++) {
    const downloaded = await fetch(`${baseUrl}/Download/FromKey/${file.fileKey}`);
    t.equal(downloaded.status, 200);
    await downloaded.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 20));
    lag = sample(await scrape(service), 'filestore_download_counter_flush_lag_seconds') ?? 0;
  }
  t.ok(lag > 0, 'a count waits to be written');
  await service.app.downloadCounter.flush();
  t.equal(sample(await scrape(service), 'filestore_download_counter_flush_lag_seconds'), 0, 'written');

  await storeFile(service, bucketId, { expired: true });
  await storeFile(service, bucketId, { expired: true });
  let text = '';
  for (let i = 0; i < 50; i++) {
    text = await scrape(service);
    if ((sample(text, 'filestore_expiry_sweeper_files_removed_total') ?? 0) >= 2) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.equal(sample(text, 'filestore_expiry_sweeper_files_removed_total'), 2);
  t.ok((sample(text, 'filestore_expiry_sweeper_runs_total{outcome="ok"}') ?? 0) >= 1);
});

t.test('each service instance has its own registry', async (t) => {
  const one = await startService(t);
  const two = await startService(t);
  await one.app.inject({ url: '/health' });
  await one.app.inject({ url: '/health' });
  await two.app.inject({ url: '/health' });
  const series = 'filestore_http_request_duration_seconds_count{route="/health",method="GET",status="200"}';
  t.equal(sample(await scrape(one), series), 2);
  t.equal(sample(await scrape(two), series), 1);
});
